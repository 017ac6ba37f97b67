//! From a bash AST to what runs: a flat list of [`Exec`] units (argv after quote removal,
//! the files they write, what they read on stdin), found by walking every construct —
//! lists, pipelines, subshells, groups, loops, conditionals, functions, redirections,
//! process and command substitutions. Code inside strings (command substitutions) is
//! parsed again; what cannot be read with certainty becomes a [`Problem`].

use brush_parser::ast;
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{Parser, ParserOptions};

/// A word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// Known before the command runs.
    Lit(String),
    /// Only known when it runs (a parameter expansion, a substitution); the raw text.
    Unknown(String),
}

impl Arg {
    pub fn lit(&self) -> Option<&str> {
        match self {
            Arg::Lit(s) => Some(s),
            Arg::Unknown(_) => None,
        }
    }

    pub fn raw(&self) -> &str {
        match self {
            Arg::Lit(s) | Arg::Unknown(s) => s,
        }
    }
}

/// What stdin carries into a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stdin {
    /// The terminal, a file, or nothing we know of.
    Inherited,
    /// The previous command of a pipeline (run-time data).
    Pipe,
    /// A here-document or here-string, when literal.
    Text(String),
    /// A here-document or here-string with expansions.
    Unknown,
}

/// One command that runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    pub argv: Vec<Arg>,
    /// Files it writes through redirections (`>`, `>>`, `&>`, `<>`).
    pub writes: Vec<Arg>,
    pub stdin: Stdin,
    /// The command as written.
    pub text: String,
}

/// Something that cannot be analysed with certainty: it fails closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub matched: String,
    pub reason: String,
}

/// How deep code may nest in code (`bash -c "$(...)"`...) before it is refused.
pub const MAX_DEPTH: usize = 12;

fn options() -> ParserOptions {
    ParserOptions::default()
}

pub fn parse(text: &str) -> Result<ast::Program, String> {
    let mut parser = Parser::new(std::io::BufReader::new(text.as_bytes()), &options());
    parser.parse_program().map_err(|e| e.to_string())
}

/// The walk of one script (and the scripts nested in its words).
#[derive(Default)]
pub struct Walk {
    pub execs: Vec<Exec>,
    pub problems: Vec<Problem>,
}

impl Walk {
    /// Parses `text` and walks it; a parse error is a problem.
    pub fn script(&mut self, text: &str, depth: usize) {
        if depth > MAX_DEPTH {
            return self.problem(text, "code nested too deeply to analyse");
        }
        match parse(text) {
            Ok(program) => {
                for list in &program.complete_commands {
                    self.list(list, depth);
                }
            }
            Err(e) => self.problem(text, &format!("the shell syntax does not parse ({e})")),
        }
    }

    fn problem(&mut self, matched: &str, reason: &str) {
        self.problems.push(Problem {
            matched: matched.chars().take(200).collect(),
            reason: reason.to_string(),
        });
    }

    fn list(&mut self, list: &ast::CompoundList, depth: usize) {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first, depth);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, depth),
                }
            }
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline, depth: usize) {
        for (i, cmd) in p.seq.iter().enumerate() {
            let stdin = if i == 0 { Stdin::Inherited } else { Stdin::Pipe };
            self.command(cmd, stdin, depth);
        }
    }

    fn command(&mut self, cmd: &ast::Command, stdin: Stdin, depth: usize) {
        match cmd {
            ast::Command::Simple(simple) => self.simple(simple, stdin, depth),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound, depth);
                self.redirects_only(cmd, redirects.as_ref(), depth);
            }
            ast::Command::Function(def) => {
                // A function's body runs when it is called: analyse it as if it ran.
                self.compound(&def.body.0, depth);
                self.redirects_only(cmd, def.body.1.as_ref(), depth);
            }
            ast::Command::ExtendedTest(test, redirects) => {
                self.test_expr(&test.expr, depth);
                self.redirects_only(cmd, redirects.as_ref(), depth);
            }
        }
    }

    /// The redirections of a compound command: the files it writes.
    fn redirects_only(&mut self, cmd: &ast::Command, redirects: Option<&ast::RedirectList>, depth: usize) {
        let Some(list) = redirects else { return };
        let mut exec = Exec {
            argv: Vec::new(),
            writes: Vec::new(),
            stdin: Stdin::Inherited,
            text: cmd.to_string(),
        };
        for r in &list.0 {
            self.redirect(r, &mut exec, depth);
        }
        if !exec.writes.is_empty() {
            self.execs.push(exec);
        }
    }

    fn test_expr(&mut self, e: &ast::ExtendedTestExpr, depth: usize) {
        match e {
            ast::ExtendedTestExpr::And(a, b) | ast::ExtendedTestExpr::Or(a, b) => {
                self.test_expr(a, depth);
                self.test_expr(b, depth);
            }
            ast::ExtendedTestExpr::Not(a) | ast::ExtendedTestExpr::Parenthesized(a) => self.test_expr(a, depth),
            ast::ExtendedTestExpr::UnaryTest(_, w) => {
                self.word(w, depth);
            }
            ast::ExtendedTestExpr::BinaryTest(_, a, b) => {
                self.word(a, depth);
                self.word(b, depth);
            }
        }
    }

    fn compound(&mut self, c: &ast::CompoundCommand, depth: usize) {
        match c {
            ast::CompoundCommand::BraceGroup(b) => self.list(&b.list, depth),
            ast::CompoundCommand::Subshell(s) => self.list(&s.list, depth),
            ast::CompoundCommand::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(w, depth);
                }
                self.list(&f.body.list, depth);
            }
            ast::CompoundCommand::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater].into_iter().flatten() {
                    self.arithmetic(&e.value, depth);
                }
                self.list(&f.body.list, depth);
            }
            ast::CompoundCommand::CaseClause(c) => {
                self.word(&c.value, depth);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(p, depth);
                    }
                    if let Some(list) = &item.cmd {
                        self.list(list, depth);
                    }
                }
            }
            ast::CompoundCommand::IfClause(i) => {
                self.list(&i.condition, depth);
                self.list(&i.then, depth);
                for e in i.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        self.list(cond, depth);
                    }
                    self.list(&e.body, depth);
                }
            }
            ast::CompoundCommand::WhileClause(w) | ast::CompoundCommand::UntilClause(w) => {
                self.list(&w.0, depth);
                self.list(&w.1.list, depth);
            }
            ast::CompoundCommand::Coprocess(c) => self.command(&c.body, Stdin::Inherited, depth),
            ast::CompoundCommand::Arithmetic(a) => self.arithmetic(&a.expr.value, depth),
        }
    }

    /// Arithmetic is a number, unless it hides a substitution — or is not arithmetic
    /// at all: bash runs `((cmd))` and `$((cmd))` that do not parse as arithmetic as
    /// nested subshells, so they are walked as code.
    fn arithmetic(&mut self, text: &str, depth: usize) {
        if brush_parser::arithmetic::parse(&expansions_as_numbers(text)).is_err() {
            return self.script(text, depth + 1);
        }
        if text.contains("$(") || text.contains('`') {
            self.word_text(text, depth);
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand, stdin: Stdin, depth: usize) {
        let mut exec = Exec {
            argv: Vec::new(),
            writes: Vec::new(),
            stdin,
            text: s.to_string(),
        };
        for item in s.prefix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, true, &mut exec, depth);
        }
        if let Some(w) = &s.word_or_name {
            let a = self.word(w, depth);
            exec.argv.push(a);
        }
        for item in s.suffix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, false, &mut exec, depth);
        }
        self.execs.push(exec);
    }

    fn item(&mut self, item: &ast::CommandPrefixOrSuffixItem, in_prefix: bool, exec: &mut Exec, depth: usize) {
        match item {
            ast::CommandPrefixOrSuffixItem::IoRedirect(r) => self.redirect(r, exec, depth),
            ast::CommandPrefixOrSuffixItem::Word(w) => {
                let a = self.word(w, depth);
                exec.argv.push(a);
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(_, w) => {
                // A prefix assignment only sets the environment of this command; after
                // the command word (`declare x=...`) it is an argument.
                let a = self.word(w, depth);
                if !in_prefix {
                    exec.argv.push(a);
                }
            }
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                self.list(&sub.list, depth);
                exec.argv.push(Arg::Unknown("<(...)".into()));
            }
        }
    }

    fn redirect(&mut self, r: &ast::IoRedirect, exec: &mut Exec, depth: usize) {
        use ast::IoFileRedirectKind as K;
        match r {
            ast::IoRedirect::File(_, kind, target) => match target {
                ast::IoFileRedirectTarget::Filename(w) => {
                    let a = self.word(w, depth);
                    if matches!(kind, K::Write | K::Append | K::Clobber | K::ReadAndWrite) {
                        exec.writes.push(a);
                    }
                }
                ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => self.list(&sub.list, depth),
                ast::IoFileRedirectTarget::Fd(_) | ast::IoFileRedirectTarget::Duplicate(_) => {}
            },
            ast::IoRedirect::OutputAndError(w, _) => {
                let a = self.word(w, depth);
                exec.writes.push(a);
            }
            ast::IoRedirect::HereString(_, w) => {
                exec.stdin = match self.word(w, depth) {
                    Arg::Lit(s) => Stdin::Text(s),
                    Arg::Unknown(_) => Stdin::Unknown,
                };
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                exec.stdin = if doc.requires_expansion {
                    match word::parse_heredoc(&doc.doc.value, &options()) {
                        Ok(pieces) => match self.pieces(&doc.doc.value, &pieces, depth) {
                            Some(text) => Stdin::Text(text),
                            None => Stdin::Unknown,
                        },
                        Err(e) => {
                            self.problem(&doc.doc.value, &format!("the here-document does not parse ({e})"));
                            Stdin::Unknown
                        }
                    }
                } else {
                    Stdin::Text(doc.doc.value.clone())
                };
            }
        }
    }

    /// A word after quote removal; substitutions inside it are walked as code.
    pub fn word(&mut self, w: &ast::Word, depth: usize) -> Arg {
        self.word_text(&w.value, depth)
    }

    fn word_text(&mut self, text: &str, depth: usize) -> Arg {
        match word::parse(text, &options()) {
            Ok(pieces) => match self.pieces(text, &pieces, depth) {
                Some(s) => Arg::Lit(s),
                None => Arg::Unknown(text.to_string()),
            },
            Err(e) => {
                self.problem(text, &format!("the word does not parse ({e})"));
                Arg::Unknown(text.to_string())
            }
        }
    }

    /// The literal text of word pieces, or `None` when some piece is only known at run
    /// time. Every substitution is walked as code either way.
    fn pieces(&mut self, source: &str, pieces: &[WordPieceWithSource], depth: usize) -> Option<String> {
        let mut out = Some(String::new());
        let push = |out: &mut Option<String>, s: &str| {
            if let Some(o) = out {
                o.push_str(s);
            }
        };
        for p in pieces {
            match &p.piece {
                WordPiece::Text(s) | WordPiece::SingleQuotedText(s) | WordPiece::AnsiCQuotedText(s) => {
                    push(&mut out, s)
                }
                WordPiece::EscapeSequence(s) => {
                    // `\x` is `x`; a backslash-newline is nothing.
                    let rest: String = s.chars().skip(1).collect();
                    if rest != "\n" {
                        push(&mut out, &rest);
                    }
                }
                WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    match self.pieces(source, inner, depth) {
                        Some(s) => push(&mut out, &s),
                        None => out = None,
                    }
                }
                WordPiece::TildeExpansion(_) => push(&mut out, "~"),
                WordPiece::ParameterExpansion(_) => {
                    let raw = source.get(p.start_index..p.end_index).unwrap_or(source);
                    if raw.contains("$(") || raw.contains('`') || raw.contains("<(") {
                        self.problem(raw, "code inside a parameter expansion is not analysed");
                    }
                    out = None;
                }
                WordPiece::CommandSubstitution(code) => {
                    self.script(code, depth + 1);
                    out = None;
                }
                WordPiece::BackquotedCommandSubstitution(code) => {
                    let code = code.replace("\\`", "`").replace("\\$", "$").replace("\\\\", "\\");
                    self.script(&code, depth + 1);
                    out = None;
                }
                WordPiece::ArithmeticExpression(e) => {
                    self.arithmetic(&e.value, depth);
                    out = None;
                }
            }
        }
        out
    }
}

/// Arithmetic text with every `$name`, `${...}`, `$(...)` and backquoted part replaced by
/// `0`, so the arithmetic parser (which reads expanded text) can tell arithmetic from
/// commands.
fn expansions_as_numbers(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let closing = |open: char, close: char, mut j: usize| {
        let mut level = 0;
        while j < chars.len() {
            if chars[j] == open {
                level += 1;
            } else if chars[j] == close {
                level -= 1;
                if level == 0 {
                    return j + 1;
                }
            }
            j += 1;
        }
        chars.len()
    };
    while i < chars.len() {
        match chars[i] {
            '$' if chars.get(i + 1) == Some(&'{') => {
                i = closing('{', '}', i + 1);
                out.push('0');
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                i = closing('(', ')', i + 1);
                out.push('0');
            }
            '$' => {
                i += 1;
                while i < chars.len() && (chars[i].is_alphanumeric() || "_#@*?!-".contains(chars[i])) {
                    i += 1;
                    if !chars[i - 1].is_alphanumeric() && chars[i - 1] != '_' {
                        break;
                    }
                }
                out.push('0');
            }
            '`' => {
                i += 1;
                while i < chars.len() && chars[i] != '`' {
                    i += 1;
                }
                i += 1;
                out.push('0');
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}
