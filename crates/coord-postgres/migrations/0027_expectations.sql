-- coord_expect(ok): true when ok is true, otherwise an error with SQLSTATE CD001
-- ("a prediction missed"). An operation whose outcome the domain decided on predicted
-- facts sends its whole transaction in one write (`predicted.rs`): a statement per
-- premise checks it against the rows as stored, and a premise that does not hold aborts
-- the transaction before its writes, audit row and COMMIT take effect. PostgreSQL's SQL
-- cannot raise an error by itself, hence the function. NULL counts as false.
CREATE OR REPLACE FUNCTION coord_expect(ok boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION 'a premise of a predicted operation does not hold' USING ERRCODE = 'CD001';
    END IF;
    RETURN true;
END
$$;
