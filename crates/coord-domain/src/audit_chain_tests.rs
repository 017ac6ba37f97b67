use super::*;
use crate::identity::Identity;
use crate::time::from_micros;
use serde_json::json;

fn record(i: i64) -> AuditRecord {
    AuditRecord {
        agent: Identity {
            agent_id: format!("agent-{}", i % 3),
            agent_type: "claude_code".into(),
        },
        operation: "acquire_lock",
        parameters: json!({"file_path": format!("src/{i}.rs"), "ttl_minutes": 5, "z": {"b": 1.5, "a": [1, null]}}),
        result: json!({"success": true, "fencing_token": i}),
        success: true,
        error_code: None,
        duration_ms: 0.25 * i as f64,
        origin: None,
    }
}

/// A chain of `n` rows as a store returns them (ids 100, 101, …).
fn chain(n: i64) -> Vec<AuditEntry> {
    let mut head = ChainHead::genesis();
    (1..=n)
        .map(|i| {
            let rec = record(i);
            let ts = from_micros(1_700_000_000_000_000 + i * 1000);
            let link = head.next(&rec, ts);
            head = ChainHead {
                seq: link.seq,
                hash: link.hash.clone(),
            };
            AuditEntry {
                id: 99 + i,
                timestamp: ts,
                agent_id: rec.agent.agent_id,
                agent_type: rec.agent.agent_type,
                operation: rec.operation.into(),
                parameters: rec.parameters,
                result: rec.result,
                success: rec.success,
                error_code: None,
                duration_ms: rec.duration_ms,
                origin: None,
                chain: Some(link),
            }
        })
        .collect()
}

fn verify(rows: &[AuditEntry], checkpoints: Vec<Checkpoint>, key: Option<AuditKey>) -> VerifyAuditResult {
    let mut v = ChainVerifier::new(key, checkpoints, None);
    for r in rows {
        v.feed(r);
    }
    v.finish(0, None)
}

#[test]
fn an_untouched_chain_is_intact() {
    let rows = chain(10);
    let r = verify(&rows, vec![], None);
    assert!(r.intact, "{r:?}");
    assert_eq!(r.rows_checked, 10);
    assert_eq!(r.head.unwrap().seq, 10);
    assert_eq!(r.signatures, "none");
}

#[test]
fn every_kind_of_tampering_names_the_first_bad_row() {
    type Tamper = fn(&mut Vec<AuditEntry>);
    let cases: Vec<(&str, Tamper, &str, i64)> = vec![
        ("edited operation", |r| r[4].operation = "forged".into(), "edited", 5),
        (
            "edited parameters",
            |r| r[2].parameters["ttl_minutes"] = json!(6),
            "edited",
            3,
        ),
        ("edited success", |r| r[6].success = false, "edited", 7),
        ("edited time", |r| r[0].timestamp = from_micros(1), "edited", 1),
        ("edited duration", |r| r[8].duration_ms += 1.0, "edited", 9),
        (
            "deleted a middle row",
            |r| {
                r.remove(3);
            },
            "missing",
            5,
        ),
        (
            "deleted the first rows",
            |r| {
                r.drain(0..2);
            },
            "missing",
            3,
        ),
        (
            "renumbered a swap",
            |r| {
                r.swap(5, 6);
                let (a, b) = (r[5].chain.clone().unwrap().seq, r[6].chain.clone().unwrap().seq);
                r[5].chain.as_mut().unwrap().seq = b;
                r[6].chain.as_mut().unwrap().seq = a;
            },
            "edited",
            6,
        ),
        (
            "a row rehashed after editing",
            |r| {
                r[3].operation = "forged".into();
                let h = entry_hash(&r[3]).unwrap();
                r[3].chain.as_mut().unwrap().hash = h;
            },
            "broken_link",
            5,
        ),
        (
            "an inserted copy",
            |r| {
                let copy = r[2].clone();
                r.insert(3, copy);
            },
            "inserted",
            3,
        ),
    ];
    for (name, tamper, kind, seq) in cases {
        let mut rows = chain(10);
        tamper(&mut rows);
        let r = verify(&rows, vec![], None);
        assert!(!r.intact, "{name}: {r:?}");
        let p = r.problem.unwrap();
        assert_eq!((p.kind.as_str(), p.seq), (kind, Some(seq)), "{name}: {}", p.message);
    }
}

#[test]
fn canonical_json_survives_what_the_stores_do_to_it() {
    // jsonb reorders keys and writes 1e18 as digits and 3.0 as 3.0; text keeps them.
    let written = json!({
        "b": 1e18, "a": 3.0, "c": [0.1, -0.0, 1e300, 117.63331139400017, 4.4737164812014446e192],
        "d": 9007199254740993_i64, "e": 18446744073709551615_u64, "f": 1e19
    });
    // What jsonb gives back: keys reordered, exponents written out as digits.
    let read_back: Value = serde_json::from_str(&format!(
        r#"{{"a": 3.0, "b": 1000000000000000000, "c": [0.1, 0.0, 1{}, 117.63331139400017, 44737164812014446{}],
            "d": 9007199254740993, "e": 18446744073709551615, "f": 10000000000000000000}}"#,
        "0".repeat(300),
        "0".repeat(176)
    ))
    .unwrap();
    let (mut x, mut y) = (String::new(), String::new());
    canonical(&written, &mut x);
    canonical(&read_back, &mut y);
    assert_eq!(x, y);
    assert!(x.starts_with("{\"a\":3,\"b\":1000000000000000000,\"c\":[0.1,0,"), "{x}");
    // Integers beyond 2^53 keep every digit: a changed last digit changes the hash.
    let (mut one, mut other) = (String::new(), String::new());
    canonical(&json!(9007199254740993_i64), &mut one);
    canonical(&json!(9007199254740992_i64), &mut other);
    assert_ne!(one, other);
}

fn checkpoint(key: &AuditKey, through: &AuditEntry, pruned: i64) -> Checkpoint {
    let body = CheckpointBody {
        created_at: from_micros(1_800_000_000_000_000),
        through_seq: through.chain.as_ref().unwrap().seq,
        through_hash: through.chain.as_ref().unwrap().hash.clone(),
        cutoff: from_micros(1_750_000_000_000_000),
        pruned_rows: pruned,
        key_id: key.id(),
    };
    Checkpoint {
        id: 1,
        signature: key.sign(&body),
        body,
    }
}

#[test]
fn a_signed_checkpoint_carries_the_chain_across_a_prune() {
    let key = AuditKey::new("k1");
    let rows = chain(10);
    let cp = checkpoint(&key, &rows[3], 4);
    let kept = &rows[4..];
    let r = verify(kept, vec![cp.clone()], Some(key.clone()));
    assert!(r.intact, "{r:?}");
    assert_eq!((r.first_seq, r.signatures.as_str()), (Some(5), "verified"));
    let r = verify(kept, vec![cp.clone()], None);
    assert!(r.intact && r.signatures == "unchecked", "{r:?}");
    // Without the checkpoint, or edited, or claiming this key without its signature:
    // refused.
    assert_eq!(verify(kept, vec![], None).problem.unwrap().kind, "missing");
    // Signed with another server's key: not checkable here, and said so.
    let other = checkpoint(&AuditKey::new("k2"), &rows[3], 4);
    let r = verify(kept, vec![other.clone()], Some(key.clone()));
    assert!(r.intact && r.signatures.starts_with("foreign"), "{r:?}");
    let mut forged = other;
    forged.body.key_id = key.id();
    assert_eq!(
        verify(kept, vec![forged], Some(key.clone())).problem.unwrap().kind,
        "bad_checkpoint"
    );
    let mut edited = cp.clone();
    edited.body.pruned_rows = 1;
    assert_eq!(
        verify(kept, vec![edited], Some(key.clone())).problem.unwrap().kind,
        "bad_checkpoint"
    );
    // A checkpoint that does not end where the kept rows begin covers nothing.
    let early = checkpoint(&key, &rows[2], 3);
    assert_eq!(verify(kept, vec![early], Some(key)).problem.unwrap().kind, "missing");
}

#[test]
fn rows_outside_the_chain_and_a_cut_tail_are_found() {
    let rows = chain(6);
    let mut v = ChainVerifier::new(None, vec![], None);
    rows.iter().for_each(|r| v.feed(r));
    let r = v.finish(2, Some(200));
    assert_eq!(
        (r.problem.as_ref().unwrap().kind.as_str(), r.unchained_rows),
        ("inserted", 2)
    );
    let head = ChainHead {
        seq: 6,
        hash: rows[5].chain.as_ref().unwrap().hash.clone(),
    };
    let mut v = ChainVerifier::new(None, vec![], Some(head.clone()));
    rows[..4].iter().for_each(|r| v.feed(r));
    let r = v.finish(0, None);
    assert_eq!(r.problem.unwrap().kind, "missing", "rows cut from the end");
    let mut v = ChainVerifier::new(None, vec![], Some(head));
    rows.iter().for_each(|r| v.feed(r));
    assert!(v.finish(0, None).intact);
}

#[test]
fn keys_sign_and_verify() {
    let key = AuditKey::new("secret");
    let rows = chain(2);
    let cp = checkpoint(&key, &rows[1], 2);
    assert!(key.verifies(&cp.body, &cp.signature));
    assert!(!key.verifies(&cp.body, "zz"));
    assert!(!key.verifies(&cp.body, &"0".repeat(64)));
    assert_ne!(key.id(), AuditKey::new("other").id());
    assert!(!format!("{key:?}").contains("secret"));
}

/// The hashed layout is fixed: rows written by every earlier version still verify. The
/// expected hash was computed outside Rust (Python's hashlib over the layout written
/// out by hand), and the store-side form (`HashedContent`) gives the same.
#[test]
fn the_hashed_layout_is_stable() {
    let rec = AuditRecord {
        agent: Identity {
            agent_id: "a".into(),
            agent_type: "t".into(),
        },
        operation: "acquire_lock",
        parameters: json!({"b": 1, "a": "x"}),
        result: json!({"success": true}),
        success: true,
        error_code: None,
        duration_ms: 1.5,
        origin: None,
    };
    let expected = "9b05ac5b3b00edfb21556c05956af698b54d1df007abcf5489c6b7c742505067";
    let head = ChainHead {
        seq: 6,
        hash: GENESIS.into(),
    };
    let at = from_micros(1_700_000_000_000_000);
    assert_eq!(head.next(&rec, at).hash, expected);
    assert_eq!(
        HashedContent::of_record(&rec).hash(7, GENESIS, 1_700_000_000_000_000),
        expected
    );
}
