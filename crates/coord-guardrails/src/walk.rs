//! From a bash AST to what runs: a flat list of [`Exec`] units (argv after quote removal,
//! the files they write, what they read on stdin), found by walking every construct —
//! lists, pipelines, subshells, groups, loops, conditionals, functions, redirections,
//! process and command substitutions. Code inside strings (command substitutions) is
//! parsed again; what cannot be read with certainty becomes a [`Problem`].

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use brush_parser::ast;
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{Parser, ParserOptions};

use crate::builtins;
use crate::scope::{self, Effect, Scope};

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
    /// The previous commands of a pipeline list processes, init among them (`ps aux |
    /// awk '{print $2}' | …`): PIDs a `kill` must not get.
    Processes,
    /// The previous command of a pipeline is a `find` that lists only build leftovers
    /// below the project (`find . -name __pycache__ | xargs rm -rf`).
    Leftovers,
    /// A here-document or here-string, when literal.
    Text(String),
    /// A here-document or here-string with expansions.
    Unknown,
    /// A file (`< scripts/x.sh`): what is in it is not in the command line.
    File(Arg),
}

/// The device files that name a process's own standard input.
pub const STDIN_DEVICES: &[&str] = &["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"];

impl Stdin {
    /// Input whose text is only known at run time: a pipe (whatever precedes it) or an
    /// expanding here-document.
    pub fn from_run_time(&self) -> bool {
        matches!(self, Stdin::Pipe | Stdin::Processes | Stdin::Leftovers | Stdin::Unknown)
    }
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
    /// The absolute directory it runs in, when the line surely changed to one
    /// ([`scope`]); relative paths are as written otherwise.
    pub cwd: Option<String>,
    /// The code changed directory in a way not followed: not where the code started.
    pub cwd_lost: bool,
    /// What the groups, subshells, loops and functions around it redirect to and from
    /// (`{ sh -i; } </dev/tcp/…`): their writes are judged once, with the construct; what
    /// this command reads or sends through them is judged with it.
    pub enclosing: Vec<Arg>,
    /// The command's own assignments (`GIT_CONFIG_KEY_0=… git gc`): each name, and its
    /// value when known.
    pub env: Vec<(String, Option<String>)>,
    /// A `trap CODE EXIT` whose code the walk followed as the line's exit handler: its
    /// commands are among the walk's, with what the variables may hold when it runs
    /// ([`Walk::exit_handlers`]), and are not judged again on their own.
    pub exit_handler: bool,
    /// Words that are only a quoted name holding a value or the empty string
    /// (`"$d"` after `d=$(mktemp -d);`), with that value: an empty word names no file,
    /// so a deletion reaches the value or nothing ([`Scope::or_empty`]).
    pub or_empty: Vec<(String, String)>,
}

/// Something that cannot be analysed with certainty: it fails closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub matched: String,
    pub reason: String,
}

/// Operands that are only known at run time (`xargs` input, `find -exec {}`).
pub const RUNTIME_OPERAND: &str = "{run-time operand}";

/// The variable standing for the input `xargs -I` and `parallel` put into the code they
/// run: a word holding it reads as an operand only known at run time.
pub const RUNTIME_HOLE: &str = "$COORD_RUNTIME_OPERAND";

/// How deep code may nest in code (`bash -c "$(...)"`...) before it is refused.
pub const MAX_DEPTH: usize = 12;

/// Calls of the line's functions whose bodies are walked with their arguments, in all, and
/// how deep such calls may nest; a call past either bound is judged by the body walked
/// with unknown arguments (a line may call thousands, or each function two others).
const MAX_CALLS_WALKED: usize = 64;
const MAX_CALL_NESTING: usize = 8;

fn options() -> ParserOptions {
    ParserOptions::default()
}

pub fn parse(text: &str) -> Result<ast::Program, String> {
    let run = |t: &str| {
        let mut parser = Parser::new(std::io::BufReader::new(t.as_bytes()), &options());
        parser.parse_program().map_err(|e| e.to_string())
    };
    run(text).or_else(|e| {
        // A backslash that ends the input continues the line into nothing (bash reading
        // a script drops it; `bash -c` keeps it as a word `\`, a file name at most): the
        // line is read without it.
        let t = text.trim_end();
        let trailing = t.chars().rev().take_while(|c| *c == '\\').count();
        if trailing % 2 == 1 {
            run(&t[..t.len() - 1]).map_err(|_| e)
        } else {
            Err(e)
        }
    })
}

/// The walk of one script (and the scripts nested in its words).
#[derive(Default)]
pub struct Walk {
    pub execs: Vec<Exec>,
    pub problems: Vec<Problem>,
    /// What the line has set so far, for the command being walked.
    scope: Scope,
    /// What the last simple command did to the shell state.
    pending: Option<Effect>,
    /// Names assigned and whether the directory changed, inside the construct being
    /// walked: a branch or loop forgets them for what follows it.
    assigned: BTreeSet<String>,
    moved: bool,
    forgot: bool,
    /// Functions the line defines: calling one may change anything.
    functions: BTreeSet<String>,
    /// Their bodies, walked where they are called with the call's arguments as `$1`,
    /// `"$@"`…: every body a name was given, since one given in a branch, a subshell or
    /// a substitution may or may not be the one that runs. (A call is also judged as the
    /// program of its name: the analysis does not decide which runs.)
    bodies: BTreeMap<String, Vec<Rc<ast::FunctionBody>>>,
    /// Functions called where their body was not walked ([`MAX_CALLS_WALKED`], a
    /// recursion): walked with unknown arguments once the line is walked.
    /// With what those calls redirect to and from (`f </dev/tcp/…`).
    unwalked: BTreeMap<String, Vec<Arg>>,
    /// Functions whose bodies were walked at a call since they were last given one.
    called: BTreeSet<String>,
    /// Calls whose bodies were walked so far.
    calls_walked: usize,
    /// The redirections of the constructs being walked ([`Exec::enclosing`]).
    enclosing: Vec<Arg>,
    /// The line hands functions to code this walk does not see (`export -f`, `source`,
    /// an alias): every body is also walked with unknown arguments.
    indirect: bool,
    /// `shift`s walked so far: a loop with one sees other arguments on each pass.
    shifts: usize,
    /// A `cd` happened that is not followed.
    cwd_lost: bool,
    /// Inside a loop already analysed once per value (loops in it are not expanded).
    expanding: bool,
    /// Names assigned inside words (`${v:=…}`) by the pipeline being walked.
    word_assigned: Vec<String>,
    /// The exit handlers set at the top of the line (`trap 'rm -rf "$t"' EXIT`): the
    /// code, the state when it was set, and the moment ([`scope::mark`]). Once the line
    /// is walked, the state it may run in: what was known then, less all the line changed
    /// since (the shell may exit at any moment: the end, an `exit`, `set -e`, a signal).
    exit_traps: Vec<(String, Scope, u64)>,
    /// Other traps set at the top of the line (judged on their own): each command's
    /// place in [`Walk::execs`] and the moment it was set. Their code runs in the
    /// directory of that moment only if the line does not change directory after it.
    traps: Vec<(usize, u64)>,
    /// How deep the command being walked is in constructs (branches, loops, groups,
    /// subshells, function bodies, pipelines of several, background jobs): exit handlers
    /// are followed at the top only.
    level: usize,
    /// The depth the walk started at ([`Walk::line`]): deeper code is nested in a word.
    base: usize,
    /// The functions whose bodies are being walked.
    defining: Vec<String>,
    /// Commands by which a function starts itself alongside itself (`:(){ :|:& };:`): a
    /// fork bomb.
    fork_bombs: Vec<String>,
    /// Calls made from functions' bodies, to find functions that start each other
    /// (`a(){ b|b& }; b(){ a; }`).
    calls: Vec<Call>,
}

/// A command in a function's body that may call another function of the line.
#[derive(Debug)]
struct Call {
    from: String,
    to: String,
    /// The pipeline's text when the call runs alongside another command (in a pipeline of
    /// several, or in the background).
    forked: Option<String>,
}

impl Walk {
    /// A walk of nested code (`bash -c`, a package script, a recipe line): it starts in a
    /// shell whose variables the line may have set, so no convention (`$TMPDIR` is /tmp)
    /// is taken.
    fn nested() -> Walk {
        let mut w = Walk::default();
        w.scope.forget_all();
        w
    }

    /// The walk of a whole command line, or of code nested in one (`depth` > 0: its
    /// variables may have been set by the line, so no convention holds), with the bodies
    /// of the functions it defines.
    pub fn line(text: &str, depth: usize) -> Walk {
        let mut w = if depth == 0 { Walk::default() } else { Walk::nested() };
        w.base = depth;
        w.script(text, depth);
        w.exit_handlers(depth);
        w.uncalled(depth);
        w
    }

    /// Walks the exit handlers set at the top of the line, each with what the line may hold
    /// when it runs ([`Scope::since`], settled at the line's end by `script`), and with
    /// every function of the line known. What does not parse is a problem.
    fn exit_handlers(&mut self, depth: usize) {
        let end = self.scope.clone();
        for (code, scope, _) in std::mem::take(&mut self.exit_traps) {
            self.scope = scope;
            self.script(&code, depth + 1);
        }
        self.scope = end;
    }

    /// The bodies not walked with their arguments, with arguments not known: never
    /// called (they run some other way: `export -f`, `command_not_found_handle`), or
    /// called past the bounds, recursively, or handed to code not walked here. In rounds:
    /// a body walked may define more functions. Each body is walked again only for
    /// redirections around it not seen yet, and the walks are bounded.
    fn uncalled(&mut self, depth: usize) {
        self.calls_walked = MAX_CALLS_WALKED;
        let mut done: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut walks = 0;
        let limit = 4 * self.bodies.len() + MAX_CALLS_WALKED;
        loop {
            let indirect = self.indirect;
            // Bash itself calls this one, for any command it does not find.
            let by_bash = |f: &str| f == "command_not_found_handle";
            let never = self
                .bodies
                .keys()
                .filter(|f| (indirect || by_bash(f) || !self.called.contains(*f)) && !done.contains_key(*f));
            let never: Vec<String> = never.cloned().collect();
            for name in never {
                self.unwalked.entry(name).or_default();
            }
            if self.unwalked.is_empty() {
                return;
            }
            while let Some((name, around)) = self.unwalked.pop_first() {
                let raws: BTreeSet<String> = around.iter().map(|a| a.raw().to_string()).collect();
                if done.get(&name).is_some_and(|d| raws.is_subset(d)) {
                    continue;
                }
                walks += 1;
                if walks > limit {
                    self.unwalked.clear();
                    return self.problem(
                        &name,
                        "the line's functions call each other under more redirections than the analysis follows",
                    );
                }
                done.entry(name.clone()).or_default().extend(raws);
                let outer = std::mem::replace(&mut self.enclosing, around);
                for body in self.definitions(&name) {
                    self.body(&name, &body, None, depth);
                }
                self.enclosing = outer;
            }
        }
    }

    /// Walks a function's body as it runs: called with `args` (each when known), or with
    /// arguments not known.
    fn body(&mut self, name: &str, body: &ast::FunctionBody, args: Option<(Vec<Option<String>>, bool)>, depth: usize) {
        let around = self.enclosing.clone();
        if let Some(redirects) = &body.1 {
            self.redirect_list(name.to_string(), redirects, depth);
        }
        self.enclosing = distinct(std::mem::take(&mut self.enclosing));
        self.defining.push(name.to_string());
        self.contained(true, |w| {
            if let Some((args, exact)) = args {
                w.scope = w.scope.call(args, exact);
            }
            w.compound(&body.0, depth)
        });
        self.defining.pop();
        self.enclosing = around;
    }

    /// A call of one of the line's functions, with `argv` (the function's name first):
    /// its body walked with those arguments, unless past the bounds or a recursion (then
    /// with unknown arguments, once the line is walked).
    fn call(&mut self, exec: &Exec, depth: usize) {
        let argv = &exec.argv;
        let Some(name) = argv.first().and_then(Arg::lit) else {
            return;
        };
        // The call's redirections are the body's (`f </dev/tcp/…`).
        let mut around = self.enclosing.clone();
        around.extend(exec.writes.iter().cloned());
        if let Stdin::File(f) = &exec.stdin {
            around.push(f.clone());
        }
        let around = distinct(around);
        let bodies = self.definitions(name);
        if bodies.is_empty() {
            return;
        }
        let nested = self.defining.len();
        let bounded = self.calls_walked >= MAX_CALLS_WALKED || nested >= MAX_CALL_NESTING;
        if bounded || self.defining.iter().any(|d| d == name) {
            let pending = self.unwalked.entry(name.to_string()).or_default();
            pending.extend(around);
            *pending = distinct(std::mem::take(pending));
            return;
        }
        self.calls_walked += bodies.len();
        self.called.insert(name.to_string());
        let args = arguments(&argv[1..]);
        let outer = std::mem::replace(&mut self.enclosing, around);
        // `IFS=: f …`: the body splits words by it.
        let split = self.scope.split_changed;
        self.scope.split_changed |= exec.env.iter().any(|(n, _)| n == "IFS");
        for body in bodies {
            self.body(name, &body, Some(args.clone()), depth);
        }
        self.scope.split_changed = split;
        self.enclosing = outer;
    }

    fn definitions(&self, name: &str) -> Vec<Rc<ast::FunctionBody>> {
        self.bodies.get(name).cloned().unwrap_or_default()
    }

    /// Parses `text` and walks it; a parse error is a problem.
    fn script(&mut self, text: &str, depth: usize) {
        if depth > MAX_DEPTH {
            return self.problem(text, "code nested too deeply to analyse");
        }
        // Nested code (a substitution) runs in a subshell: what it sets stays there.
        let outer = self.scope.clone();
        match parse(text) {
            Ok(program) => {
                for list in &program.complete_commands {
                    self.list(list, depth);
                }
            }
            Err(e) => self.problem(text, &format!("the shell syntax does not parse ({e})")),
        }
        if depth == self.base {
            // The line's end: what each exit handler may see ([`Walk::exit_traps`]), and
            // where the other handlers run.
            for (_, then, mark) in &mut self.exit_traps {
                *then = self.scope.since(then, *mark);
            }
            for (at, mark) in std::mem::take(&mut self.traps) {
                if self.scope.cwd_changed_since(mark) {
                    self.execs[at].cwd = None;
                    self.execs[at].cwd_lost = true;
                }
            }
        }
        self.scope = outer;
    }

    /// A function calling itself as a command of a pipeline of several, or of a background
    /// job, inside its own body: each call starts two more (a fork bomb). Calls nested
    /// deeper (in a loop of a pipeline) are recursion, not this. A call of another function
    /// is kept: it is a fork bomb when that function calls this one back.
    fn self_calls(&mut self, p: &ast::Pipeline) {
        let mut names = Vec::new();
        for cmd in &p.seq {
            forked_calls(cmd, &mut names);
        }
        if names.iter().any(|n| self.defining.contains(n)) {
            self.fork_bombs.push(p.to_string());
        } else if let Some(from) = self.defining.last() {
            for to in names {
                let (from, forked) = (from.clone(), Some(p.to_string()));
                self.calls.push(Call { from, to, forked });
            }
        }
    }

    /// Pipelines by which functions start themselves alongside themselves, directly or
    /// through other functions of the line (`a(){ b|b& }; b(){ a; }`): fork bombs. A
    /// forked call from `a` to `b` is one when `b` leads back to `a`, that is when both
    /// are in one strongly connected component of the line's call graph (linear in the
    /// calls: a line may define thousands of functions).
    pub fn fork_bombs(&self) -> Vec<String> {
        let calls: Vec<&Call> = self.calls.iter().filter(|c| self.functions.contains(&c.to)).collect();
        let mut index = std::collections::BTreeMap::new();
        for c in &calls {
            for name in [&c.from, &c.to] {
                let next = index.len();
                index.entry(name.as_str()).or_insert(next);
            }
        }
        let edges: Vec<(usize, usize)> = calls
            .iter()
            .map(|c| (index[c.from.as_str()], index[c.to.as_str()]))
            .collect();
        let component = components(index.len(), &edges);
        let mut found = self.fork_bombs.clone();
        for (c, (from, to)) in calls.iter().zip(&edges) {
            if let Some(text) = &c.forked
                && component[*from] == component[*to]
            {
                found.push(text.clone());
            }
        }
        found
    }

    fn problem(&mut self, matched: &str, reason: &str) {
        self.problems.push(Problem {
            matched: matched.chars().take(200).collect(),
            reason: reason.to_string(),
        });
    }

    fn list(&mut self, list: &ast::CompoundList, depth: usize) {
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            if matches!(sep, ast::SeparatorOperator::Async) {
                // `x=… &`: a background job sets nothing in this shell.
                let outer = self.scope.clone();
                let pipelines = std::iter::once(&and_or.first).chain(and_or.additional.iter().map(|a| match a {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => p,
                }));
                for p in pipelines {
                    self.self_calls(p);
                }
                self.level += 1;
                self.and_or(and_or, depth);
                self.level -= 1;
                self.scope = outer;
            } else {
                self.and_or(and_or, depth);
            }
        }
    }

    /// One `a && b || c` chain. What a command sets is seen along the `&&`s after it;
    /// after the chain, only what the first command set and could not fail — or, when
    /// the chain is `a && b || exit`, what the `&&`s set (nothing after it runs otherwise).
    fn and_or(&mut self, and_or: &ast::AndOrList, depth: usize) {
        let mut after = self.scope.clone();
        match self.pipeline(&and_or.first, depth) {
            Some(e) => {
                after.apply_certain(&e);
                self.scope.apply(&e);
            }
            // A compound command or a pipeline of several: what its walk left known (it
            // forgot what it may have changed).
            None => after = self.scope.clone(),
        }
        after.forget_names(&std::mem::take(&mut self.word_assigned), false);
        let in_function = !self.defining.is_empty();
        for (i, next) in and_or.additional.iter().enumerate() {
            let last = i + 1 == and_or.additional.len();
            let all_and = and_or.additional[..i].iter().all(|a| matches!(a, ast::AndOr::And(_)));
            let p = match next {
                ast::AndOr::And(p) => p,
                ast::AndOr::Or(p) if last && all_and && ends_shell(p, in_function) => {
                    // `a && b || exit 1`: what follows runs only when `a && b` succeeded,
                    // and sees what they set.
                    after = self.scope.clone();
                    p
                }
                ast::AndOr::Or(p) => {
                    // Runs when something before failed: nothing after the first is sure.
                    self.scope = after.clone();
                    p
                }
            };
            match self.pipeline(p, depth) {
                Some(e) => {
                    after.forget(&e);
                    self.scope.apply(&e);
                }
                None => after.meet(&self.scope),
            }
            after.forget_names(&std::mem::take(&mut self.word_assigned), false);
        }
        after.keep_changes(&self.scope);
        self.scope = after;
    }

    /// The pipeline's commands; what it does to the shell state when it is one command
    /// (each part of a longer pipeline runs in a subshell).
    fn pipeline(&mut self, p: &ast::Pipeline, depth: usize) -> Option<Effect> {
        self.pending = None;
        let several = p.seq.len() > 1;
        if several {
            self.self_calls(p);
        }
        // Each part of a pipeline of several runs in a subshell.
        self.level += usize::from(several);
        for (i, cmd) in p.seq.iter().enumerate() {
            let stdin = match i {
                0 => Stdin::Inherited,
                _ if pipes_init(&p.seq[..i]) => Stdin::Processes,
                _ if lists_leftovers(&p.seq[i - 1]) => Stdin::Leftovers,
                _ if self.functions.contains("echo") => Stdin::Pipe,
                _ => literal_output(&p.seq[i - 1]).unwrap_or(Stdin::Pipe),
            };
            self.command(cmd, stdin, depth);
        }
        self.level -= usize::from(several);
        let effect = self.pending.take()?;
        self.shifts += usize::from(matches!(effect, Effect::Shift(_)));
        if let Effect::Assign(names) = &effect {
            self.assigned.extend(names.iter().map(|(n, _, _)| n.clone()));
        }
        let assigns = matches!(effect, Effect::Assign(_) | Effect::Shift(_));
        self.moved |= !assigns;
        // A shift in a branch or loop: what follows it cannot know the arguments.
        self.forgot |= matches!(effect, Effect::Forget | Effect::Distrust | Effect::Shift(_));
        // Any `cd` leaves the code somewhere not followed once its chain ends.
        self.cwd_lost |= !assigns;
        if effect == Effect::Distrust {
            return Some(effect); // for the rest of the line, whatever the pipeline
        }
        // `! cd /x && …`: what follows runs when it failed.
        if p.bang {
            return Some(Effect::Forget);
        }
        (p.seq.len() == 1).then_some(effect)
    }

    /// Walks a construct whose assignments and `cd`s may or may not happen (a branch,
    /// a group): what follows it forgets them. `fresh`: its body may run again or later
    /// (a loop, a function), so it starts knowing nothing.
    fn contained(&mut self, fresh: bool, walk: impl FnOnce(&mut Self)) {
        let mut outer = self.scope.clone();
        let assigned = std::mem::take(&mut self.assigned);
        let moved = std::mem::replace(&mut self.moved, false);
        let forgot = std::mem::replace(&mut self.forgot, false);
        if fresh {
            let trusted = self.scope.trusted();
            self.scope = Scope::default();
            self.scope.forget_all();
            if !trusted {
                self.scope.distrust();
            }
            // IFS as set before it.
            self.scope.split_changed = outer.split_changed;
            // A loop in a function's body: its arguments (a shift in it is walked again).
            self.scope.arguments_of(&outer);
        }
        self.level += 1;
        walk(self);
        self.level -= 1;
        outer.forget_names(&self.assigned, self.moved);
        // A nameref or read-only variable declared inside holds after it.
        if !self.scope.trusted() {
            outer.distrust();
        }
        outer.keep_changes(&self.scope);
        if self.forgot {
            outer.forget_all();
        }
        self.scope = outer;
        self.assigned.extend(assigned);
        self.moved |= moved;
        self.forgot |= forgot;
        self.pending = None;
    }

    fn command(&mut self, cmd: &ast::Command, stdin: Stdin, depth: usize) {
        match cmd {
            ast::Command::Simple(simple) => self.simple(simple, stdin, depth),
            ast::Command::Compound(compound, redirects) => {
                // Redirections are opened before the body runs.
                let around = self.enclosing.len();
                self.redirects_only(cmd, redirects.as_ref(), depth);
                let loops = matches!(
                    compound,
                    ast::CompoundCommand::ForClause(_)
                        | ast::CompoundCommand::ArithmeticForClause(_)
                        | ast::CompoundCommand::WhileClause(_)
                        | ast::CompoundCommand::UntilClause(_)
                );
                let (shifts, had_arguments) = (self.shifts, self.scope.arguments().is_some());
                if let ast::CompoundCommand::ForClause(f) = compound
                    && !self.expanding
                    && self.scope.trusted()
                    && let Some(values) = self.for_values(f, depth)
                {
                    // `for d in /tmp/a /tmp/b; do rm -rf "$d"; done`: the body once per value
                    // (loops inside it are not expanded again).
                    self.expanding = true;
                    for v in values {
                        self.contained(true, |w| {
                            w.scope.bind(&f.variable_name, v);
                            w.list(&f.body.list, depth);
                        });
                    }
                    self.expanding = false;
                } else {
                    self.contained(loops, |w| w.compound(compound, depth));
                    if let ast::CompoundCommand::ForClause(f) = compound
                        && !self.expanding
                        && loops_over_init(f)
                    {
                        // `for pid in $(ps -e -o pid=); do kill "$pid"; done` reaches init
                        // among the rest: the body once more with its PID (as well as
                        // with a value not known, above).
                        self.expanding = true;
                        self.contained(true, |w| {
                            w.scope.bind(&f.variable_name, "1".to_string());
                            w.list(&f.body.list, depth);
                        });
                        self.expanding = false;
                    }
                }
                if loops && had_arguments && self.shifts > shifts {
                    // Each pass after the first sees other arguments: once more, not
                    // knowing them.
                    self.scope.forget_all();
                    self.contained(true, |w| w.compound(compound, depth));
                }
                if let ast::CompoundCommand::ForClause(f) = compound {
                    self.scope.forget_names([&f.variable_name], false);
                }
                if matches!(compound, ast::CompoundCommand::Arithmetic(_)) {
                    self.scope.forget_all(); // `(( x = … ))` assigns
                }
                self.enclosing.truncate(around);
            }
            ast::Command::Function(def) => {
                // A function's body runs when it is called: it is walked there.
                let name = def.fname.value.clone();
                self.functions.insert(name.clone());
                self.bodies
                    .entry(name.clone())
                    .or_default()
                    .push(Rc::new(def.body.clone()));
                self.called.remove(&name);
            }
            ast::Command::ExtendedTest(test, redirects) => {
                let around = self.enclosing.len();
                self.redirects_only(cmd, redirects.as_ref(), depth);
                self.test_expr(&test.expr, depth);
                self.enclosing.truncate(around);
            }
        }
    }

    /// The values a `for` loop takes, when they are a few plain words (no expansion, no
    /// glob).
    fn for_values(&mut self, f: &ast::ForClauseCommand, depth: usize) -> Option<Vec<String>> {
        let words = f.values.as_ref()?;
        let plain = |w: &ast::Word| !w.value.contains(['$', '`', '*', '?', '[', '{', '~']);
        if words.is_empty() || words.len() > 16 || !words.iter().all(plain) {
            return None;
        }
        words
            .iter()
            .map(|w| self.word(w, depth).lit().map(str::to_string))
            .collect()
    }

    /// The redirections of a compound command: the files it writes.
    fn redirects_only(&mut self, cmd: &ast::Command, redirects: Option<&ast::RedirectList>, depth: usize) {
        if let Some(list) = redirects {
            self.redirect_list(cmd.to_string(), list, depth);
        }
    }

    /// A construct's redirections: a unit of their own for the files they write, and
    /// around the commands inside it ([`Exec::enclosing`]) until the caller truncates.
    fn redirect_list(&mut self, text: String, list: &ast::RedirectList, depth: usize) {
        let mut exec = self.exec(text, Stdin::Inherited);
        for r in &list.0 {
            self.redirect(r, &mut exec, depth);
        }
        self.enclosing.extend(exec.writes.iter().cloned());
        if let Stdin::File(f) = &exec.stdin {
            self.enclosing.push(f.clone());
        }
        if !exec.writes.is_empty() {
            self.execs.push(exec);
        }
    }

    /// A unit for a command about to be walked, where it runs.
    fn exec(&self, text: String, stdin: Stdin) -> Exec {
        Exec {
            argv: Vec::new(),
            writes: Vec::new(),
            stdin,
            text,
            cwd: self.scope.cwd.clone(),
            cwd_lost: self.cwd_lost && self.scope.cwd.is_none(),
            enclosing: self.enclosing.clone(),
            env: Vec::new(),
            exit_handler: false,
            or_empty: Vec::new(),
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
        let mut exec = self.exec(s.to_string(), stdin);
        let mut assigned = Vec::new();
        for item in s.prefix.iter().flat_map(|p| p.0.iter()) {
            if let Some(a) = self.item(item, true, &mut exec, depth) {
                assigned.push(a);
            }
        }
        if let Some(w) = &s.word_or_name {
            if let Some(from) = self.defining.last() {
                let (from, to) = (from.clone(), unquoted(&w.value));
                self.calls.push(Call { from, to, forked: None });
            }
            let words = self.words(w, depth);
            exec.argv.extend(words);
        }
        for item in s.suffix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, false, &mut exec, depth);
        }
        if !exec.argv.is_empty() {
            exec.env = assigned.iter().map(|(n, v, _)| (n.clone(), v.clone())).collect();
            exec.or_empty = exec.argv[1..]
                .iter()
                .filter_map(|a| match a {
                    Arg::Unknown(raw) => {
                        let value = self.scope.or_empty(quoted_name(raw)?)?;
                        Some((raw.clone(), value.to_string()))
                    }
                    Arg::Lit(_) => None,
                })
                .collect();
        }
        self.call(&exec, depth);
        exec.exit_handler = self.evaluated(&exec.argv, depth);
        if !exec.exit_handler && exec.argv.first().and_then(Arg::lit) == Some("trap") {
            // Its code, judged on its own, runs wherever the line is when it does.
            if self.level == 0 && depth == self.base {
                self.traps.push((self.execs.len(), scope::mark()));
            } else {
                exec.cwd = None;
                exec.cwd_lost = true;
            }
        }
        // `d=$(mktemp -d) e=$(true)`: the statement's status is the last substitution's,
        // so none of its substituted values is sure — wherever the others stand (`x+=$(…)`,
        // `a=($(…))`, a redirection's `>"$(…)"`, a here-string), counted in its text.
        let substitutions = exec.text.matches("$(").count() + exec.text.matches('`').count();
        if substitutions > 1 {
            for (_, value, fallible) in &mut assigned {
                if *fallible {
                    *value = None;
                }
            }
        }
        if !exec.argv.is_empty() {
            // `d=/ wait`: the value holds while the command runs, and an exit handler
            // that a signal starts then sees it.
            for (name, _, _) in &assigned {
                self.scope.touch(name);
            }
        }
        self.pending = if exec.argv.is_empty() {
            Some(Effect::Assign(assigned)).filter(|_| s.prefix.is_some())
        } else {
            self.effect(&exec.argv)
        };
        self.execs.push(exec);
    }

    /// Literal code `eval` or `trap` runs, walked here too so that the line's functions
    /// are known in it (`f build; eval "f ~"`, `f(){ eval 'f|f&'; }`); the analysis
    /// judges that code again on its own (what does not parse is reported there). And
    /// commands that hand functions to code not walked here (`export -f`, `source`, an
    /// alias). An exit handler set at the top of the line is walked once the line is
    /// ([`Walk::exit_handlers`]): true then.
    fn evaluated(&mut self, argv: &[Arg], depth: usize) -> bool {
        let Some((first, args)) = argv.split_first() else {
            return false;
        };
        let args = args.strip_prefix(&[Arg::Lit("--".into())][..]).unwrap_or(args);
        // Past a few, a handler is judged on its own (each one followed costs a copy of
        // the state and a walk).
        if first.lit() == Some("trap")
            && self.exit_traps.len() < MAX_EXIT_HANDLERS
            && self.level == 0
            && depth == self.base
            && let [Arg::Lit(code), signals @ ..] = args
            && exit_only(signals)
        {
            self.exit_traps.push((code.clone(), self.scope.clone(), scope::mark()));
            return true;
        }
        let code: Option<Vec<&str>> = match first.lit() {
            Some("eval") => args.iter().map(Arg::lit).collect(),
            Some("trap") => args.first().and_then(Arg::lit).map(|c| vec![c]),
            Some("export" | "declare" | "typeset") => {
                let functions = |a: &Arg| a.raw().starts_with('-') && a.raw().contains('f');
                self.indirect |= args.iter().any(functions);
                None
            }
            Some("alias" | "complete" | "bind" | "source" | ".") => {
                self.indirect = true;
                None
            }
            _ => None,
        };
        if let Some(code) = code {
            let problems = self.problems.len();
            self.script(&code.join(" "), depth + 1);
            self.problems.truncate(problems);
        }
        false
    }

    /// What a command with a command word does to the shell state.
    fn effect(&self, argv: &[Arg]) -> Option<Effect> {
        let word = match argv.first().map(|a| a.lit()) {
            None => return None,
            Some(None) => return Some(Effect::Forget), // a command only known at run time
            Some(Some(w)) => w,
        };
        let args = &argv[1..];
        if self.functions.contains(word) {
            return Some(Effect::Forget); // a function of the line, whatever its name
        }
        if matches!(word, "command" | "builtin") {
            let at = args
                .iter()
                .position(|a| !a.raw().starts_with('-'))
                .unwrap_or(args.len());
            return self.effect(&args[at..]);
        }
        let options = args
            .iter()
            .any(|a| a.raw().starts_with(['-', '+']) && a.raw() != "-" && a.raw() != "--");
        let names = || {
            // A name only known at run time (`declare $(echo d)=/`): any variable may change.
            // One written out with a value only known then (`local ip="$1"`) changes that
            // one variable, to a value not known.
            let named = |a: &Arg| {
                a.lit().is_some()
                    || a.raw()
                        .split_once('=')
                        .is_some_and(|(n, _)| shell_name(n.trim_end_matches('+')))
            };
            if !args.iter().all(named) {
                return Some(Effect::Forget);
            }
            let set = args.iter().filter(|a| !a.raw().starts_with('-')).map(|a| {
                let (name, value) = a.raw().split_once('=').unwrap_or((a.raw(), ""));
                // `export d+=…` appends: the value is not known.
                let appends = name.ends_with('+');
                let value = (!appends && a.raw().contains('=')).then(|| a.lit().map(|_| value.to_string()));
                (name.trim_end_matches('+').to_string(), value.flatten(), false)
            });
            Some(Effect::Assign(set.collect()))
        };
        match word {
            "pushd" if args.iter().any(|a| a.raw() == "-n") => None,
            "cd" | "pushd" => {
                let dir = args.iter().find(|a| !a.raw().starts_with('-') || a.raw() == "-");
                match dir {
                    Some(Arg::Lit(d)) if d != "-" => Some(Effect::Cd(self.scope.cd_target(Some(d)))),
                    None => Some(Effect::Cd(self.scope.cd_target(None))),
                    _ => Some(Effect::Cd(None)),
                }
            }
            "popd" => Some(Effect::Cd(None)),
            // Read-only, integer, nameref or array attributes change what later
            // assignments do: nothing is taken at its word after them.
            "readonly" | "shopt" | "hash" | "enable" | "alias" => Some(Effect::Distrust),
            "export" | "declare" | "typeset" | "local" if options => Some(Effect::Distrust),
            "export" | "declare" | "typeset" | "local" => names(),
            // A handler for a signal (or DEBUG, RETURN, ERR) may run between any two commands
            // and change anything; one for EXIT runs after them all.
            "trap" if trap_handles_signals(args) => Some(Effect::Distrust),
            // `mapfile -C CODE` runs code for each line read.
            "mapfile" | "readarray" if !matches!(builtins::mapfile_callback(args), Ok(None)) => Some(Effect::Forget),
            "read" | "mapfile" | "readarray" | "getopts" | "printf" | "let" | "unset" | "wait" => {
                match builtins::assigned_names(word, args) {
                    Some(names) => Some(Effect::Assign(names.into_iter().map(|n| (n, None, false)).collect())),
                    // A name only known at run time (`read $(echo d)`): any may change.
                    None => Some(Effect::Forget),
                }
            }
            "select" => Some(Effect::Forget),
            "eval" | "source" | "." | "exec" => Some(Effect::Forget),
            "shift" => Some(Effect::Shift(match args {
                [] => Some(1),
                [Arg::Lit(n)] => n.parse().ok(),
                _ => None,
            })),
            // In POSIX mode an assignment before a special builtin (`d=/ :`) stays set.
            "set" if args.iter().any(|a| a.raw() == "posix") => Some(Effect::Distrust),
            // `set -- a b`, `set a b`: new arguments (options alone keep them; an option's
            // value, `-o pipefail`, is read as an argument: they are forgotten, no harm).
            // (`set - -r`, `set -$o`: new arguments too.)
            "set"
                if args.iter().any(|a| {
                    a.lit().is_none() || matches!(a.raw(), "-" | "--") || !a.raw().starts_with(['-', '+'])
                }) =>
            {
                Some(Effect::Shift(None))
            }
            _ => None,
        }
    }

    /// A prefix assignment's name, value (when known and one word) and whether it can
    /// fail, when it is one.
    fn item(
        &mut self,
        item: &ast::CommandPrefixOrSuffixItem,
        in_prefix: bool,
        exec: &mut Exec,
        depth: usize,
    ) -> Option<(String, Option<String>, bool)> {
        match item {
            ast::CommandPrefixOrSuffixItem::IoRedirect(r) => self.redirect(r, exec, depth),
            ast::CommandPrefixOrSuffixItem::Word(w) => {
                let words = self.words(w, depth);
                exec.argv.extend(words);
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, w) => {
                // A prefix assignment only sets the environment of this command; after
                // the command word (`declare x=...`) it is an argument.
                if !in_prefix {
                    let a = self.word(w, depth);
                    exec.argv.push(a);
                    return None;
                }
                return Some(self.assignment(assignment, depth));
            }
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                self.subshell(&sub.list, depth);
                exec.argv.push(Arg::Unknown("<(...)".into()));
            }
        }
        None
    }

    /// Code run in a subshell: what it sets stays there.
    fn subshell(&mut self, list: &ast::CompoundList, depth: usize) {
        let outer = self.scope.clone();
        self.level += 1;
        self.list(list, depth);
        self.level -= 1;
        self.scope = outer;
    }

    /// `NAME=value` (its substitutions walked as code): the name, the value when known,
    /// and whether the assignment can fail (`d=$(mktemp -d)`).
    fn assignment(&mut self, a: &ast::Assignment, depth: usize) -> (String, Option<String>, bool) {
        let name = match &a.name {
            ast::AssignmentName::VariableName(n) | ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
        };
        let ast::AssignmentValue::Scalar(w) = &a.value else {
            if let ast::AssignmentValue::Array(items) = &a.value {
                for (_, w) in items {
                    self.word(w, depth);
                }
            }
            return (name, None, false);
        };
        let value = self.word(w, depth);
        if a.append || matches!(a.name, ast::AssignmentName::ArrayElementName(..)) {
            return (name, None, false);
        }
        match value {
            Arg::Lit(v) => (name, Some(v), false),
            // A function or a changed PATH may stand for mktemp.
            Arg::Unknown(_) if self.scope.trusted() && self.functions.is_empty() => (name, mktemp_of(&w.value), true),
            Arg::Unknown(_) => (name, None, true),
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
                    } else if matches!(kind, K::Read) {
                        exec.stdin = Stdin::File(a);
                    }
                }
                ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => self.subshell(&sub.list, depth),
                // `>&WORD` and `1>&WORD` write the file WORD unless it names a descriptor
                // (`>&2`, `>&3-`, `>&-`): `echo x >& /dev/sda` writes the disk. (Bash
                // refuses other `N>&FILE` as ambiguous; judging them too costs nothing.)
                ast::IoFileRedirectTarget::Duplicate(w) => {
                    let a = self.word(w, depth);
                    if matches!(kind, K::DuplicateOutput) && !a.lit().is_some_and(names_descriptor) {
                        exec.writes.push(a);
                    }
                }
                ast::IoFileRedirectTarget::Fd(_) => {}
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
                        Ok(pieces) => match self.pieces(&doc.doc.value, &pieces, true, depth) {
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

    /// The words a command's word stands for: the function's arguments for `"$@"` (or
    /// `$*`, `${@}`) inside a function whose arguments are known, else the word itself.
    fn words(&mut self, w: &ast::Word, depth: usize) -> Vec<Arg> {
        let quoted = matches!(w.value.as_str(), "\"$@\"" | "\"${@}\"");
        let bare = matches!(w.value.as_str(), "$@" | "${@}" | "$*" | "${*}");
        match self.scope.arguments() {
            // (Unquoted, they split again where IFS was changed.)
            Some(args) if quoted || (bare && !self.scope.split_changed) => {
                let unknown = || Arg::Unknown(w.value.clone());
                let mut words: Vec<Arg> = args
                    .known
                    .iter()
                    .map(|a| a.clone().map_or_else(unknown, Arg::Lit))
                    .collect();
                if !args.exact {
                    words.push(unknown());
                }
                words
            }
            _ => {
                // `b="curl -s"; $b URL`: an unquoted name alone splits into its words.
                let name = w
                    .value
                    .strip_prefix('$')
                    .map(|n| n.strip_prefix('{').and_then(|n| n.strip_suffix('}')).unwrap_or(n));
                let split = name
                    .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                    .and_then(|n| self.scope.split_words(n));
                match split {
                    Some(words) if words.len() > 1 => words.into_iter().map(Arg::Lit).collect(),
                    _ => vec![self.word(w, depth)],
                }
            }
        }
    }

    /// A word after quote removal; substitutions inside it are walked as code.
    pub fn word(&mut self, w: &ast::Word, depth: usize) -> Arg {
        self.word_text(&w.value, depth)
    }

    fn word_text(&mut self, text: &str, depth: usize) -> Arg {
        match word::parse(text, &options()) {
            Ok(pieces) => match self.pieces(text, &pieces, false, depth) {
                // The input `xargs -I` or `parallel` puts into code (quoted or not): any file
                // list.
                _ if text.contains(RUNTIME_HOLE) => Arg::Unknown(RUNTIME_OPERAND.into()),
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
    /// `quoted`: inside double quotes or a here-document, where expansions are not split.
    fn pieces(&mut self, source: &str, pieces: &[WordPieceWithSource], quoted: bool, depth: usize) -> Option<String> {
        let mut out = Some(String::new());
        let push = |out: &mut Option<String>, s: &str| {
            if let Some(o) = out {
                o.push_str(s);
            }
        };
        for p in pieces {
            match &p.piece {
                WordPiece::Text(s) | WordPiece::SingleQuotedText(s) => push(&mut out, s),
                // `$'r\x6d'` is `rm`: bash's escapes decoded.
                WordPiece::AnsiCQuotedText(s) => match ansi_c(s) {
                    Some(text) => push(&mut out, &text),
                    None => out = None,
                },
                WordPiece::EscapeSequence(s) => {
                    // `\x` is `x`; a backslash-newline is nothing.
                    let rest: String = s.chars().skip(1).collect();
                    if rest != "\n" {
                        push(&mut out, &rest);
                    }
                }
                WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    match self.pieces(source, inner, true, depth) {
                        Some(s) => push(&mut out, &s),
                        None => out = None,
                    }
                }
                WordPiece::TildeExpansion(_) => push(&mut out, "~"),
                WordPiece::ParameterExpansion(expr) => {
                    let raw = source.get(p.start_index..p.end_index).unwrap_or(source);
                    if raw.contains("$(") || raw.contains('`') || raw.contains("<(") {
                        // (Inside double quotes a `'` is literal: `"${v:-'$(cmd)'}"` runs cmd,
                        // which the word read unquoted would hide.)
                        let hides = quoted && raw.contains('\'');
                        match operand_word(expr).filter(|_| !raw.contains("<(") && !hides) {
                            // `${GOPATH:-$(go env GOPATH)}`: the word's substitutions run
                            // (or may): walked as code.
                            Some(w) => {
                                self.word_text(w, depth);
                                if let word::ParameterExpr::AssignDefaultValues {
                                    parameter: word::Parameter::Named(n),
                                    ..
                                } = expr
                                {
                                    self.scope.forget_names([n], false);
                                }
                            }
                            None => self.problem(raw, "code inside a parameter expansion is not analysed"),
                        }
                        out = None;
                    } else if matches!(
                        expr,
                        word::ParameterExpr::Transform {
                            op: word::ParameterTransformOp::PromptExpand,
                            ..
                        }
                    ) {
                        // `${v@P}` expands the value as a prompt: command substitutions
                        // in it run.
                        self.problem(raw, "a prompt expansion (`@P`) runs the code in the value");
                        out = None;
                    } else if let word::ParameterExpr::AssignDefaultValues {
                        parameter: word::Parameter::Named(n),
                        ..
                    } = expr
                    {
                        // `${v:=…}` assigns v.
                        self.scope.forget_names([n], false);
                        self.word_assigned.push(n.clone());
                        out = None;
                    } else {
                        match self.scope.param(expr, quoted) {
                            Some(v) => push(&mut out, &v),
                            None => out = None,
                        }
                    }
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
                    self.scope.forget_all(); // `$(( x = … ))` assigns
                    out = None;
                }
            }
        }
        out
    }
}

/// The text of `$'…'` after bash's escapes: `\x72`, `\162`, `\u0072`, `\n`, … (a NUL
/// ends the text, as in bash). `None` for a control character (`\cX`), whose text is not
/// worth guessing.
fn ansi_c(inner: &str) -> Option<String> {
    fn digits(
        chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
        radix: u32,
        max: usize,
        first: Option<u32>,
    ) -> Option<u32> {
        let mut value = first;
        for _ in first.map_or(0, |_| 1)..max {
            match chars.peek().and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    value = Some(value.unwrap_or(0) * radix + d);
                    chars.next();
                }
                None => break,
            }
        }
        value
    }
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let code = match e {
            'a' => Some(7),
            'b' => Some(8),
            'e' | 'E' => Some(27),
            'f' => Some(12),
            'n' => Some(10),
            'r' => Some(13),
            't' => Some(9),
            'v' => Some(11),
            '\\' | '\'' | '"' | '?' => Some(e as u32),
            'x' => digits(&mut chars, 16, 2, None),
            'u' => digits(&mut chars, 16, 4, None),
            'U' => digits(&mut chars, 16, 8, None),
            '0'..='7' => digits(&mut chars, 8, 3, e.to_digit(8)),
            'c' => return None,
            _ => None,
        };
        match code {
            Some(0) => break,
            Some(n) => out.push(char::from_u32(n)?),
            None => {
                out.push('\\');
                out.push(e);
            }
        }
    }
    Some(out)
}

/// The word a parameter expansion may expand to instead of the value (`${v:-WORD}`,
/// `${v:=WORD}`, `${v:+WORD}`, `${v:?WORD}`).
fn operand_word(expr: &word::ParameterExpr) -> Option<&str> {
    use word::ParameterExpr as P;
    match expr {
        P::UseDefaultValues { default_value: w, .. }
        | P::AssignDefaultValues { default_value: w, .. }
        | P::UseAlternativeValue {
            alternative_value: w, ..
        }
        | P::IndicateErrorIfNullOrUnset { error_message: w, .. } => w.as_deref(),
        _ => None,
    }
}

/// Whether `trap`'s arguments set a handler for something other than the shell's exit
/// (`trap 'rm -f "$t"' EXIT` runs after every other command; `trap f INT` may run
/// between any two; `trap -p INT` only prints).
fn trap_handles_signals(args: &[Arg]) -> bool {
    if args.iter().any(|a| matches!(a.raw(), "-p" | "-l")) {
        return false;
    }
    let args: Vec<&Arg> = args.iter().filter(|a| a.raw() != "--").collect();
    let Some((_, signals)) = args.split_first() else {
        return false;
    };
    !signals.iter().all(the_exit)
}

/// Whether a trap's signal is the shell's exit (as literal text).
fn the_exit(signal: &&Arg) -> bool {
    signal
        .lit()
        .is_some_and(|s| matches!(s.to_ascii_uppercase().as_str(), "EXIT" | "0" | "SIGEXIT"))
}

/// Exit handlers followed with the line's state ([`Walk::exit_handlers`]).
const MAX_EXIT_HANDLERS: usize = 16;

/// Whether a pipeline is `exit` alone (or `return`, in a function's body): the shell or
/// the function ends there. (`return` outside a function fails, and the line goes on.)
fn ends_shell(p: &ast::Pipeline, in_function: bool) -> bool {
    let [ast::Command::Simple(s)] = p.seq.as_slice() else {
        return false;
    };
    let word = s.word_or_name.as_ref().map(|w| w.value.as_str());
    !p.bang && s.prefix.is_none() && (word == Some("exit") || (in_function && word == Some("return")))
}

/// Whether `trap CODE SIGNALS…` handles the shell's exit and nothing else (options, a
/// reset `-`, no signal at all: not a plain exit handler).
fn exit_only(signals: &[Arg]) -> bool {
    !signals.is_empty() && signals.iter().all(|s| the_exit(&s))
}

/// `args` without repeats (by their text).
fn distinct(args: Vec<Arg>) -> Vec<Arg> {
    let mut seen = BTreeSet::new();
    args.into_iter().filter(|a| seen.insert(a.raw().to_string())).collect()
}

/// A call's arguments as the function sees them, numbered: each word's value up to the
/// first that may expand to no word or to several (a value only known at run time, an
/// empty one, a glob or brace pattern), and whether those are all of them (from that word
/// on, their number is not known).
fn arguments(words: &[Arg]) -> (Vec<Option<String>>, bool) {
    let mut known = Vec::new();
    for w in words {
        match w.lit() {
            Some(v) if !v.is_empty() && !v.contains(['*', '?', '[', '{']) => known.push(Some(v.to_string())),
            _ => return (known, false),
        }
    }
    (known, true)
}

/// The functions `cmd` calls as it runs once: a simple command's name (however quoted:
/// `"f"`, `\f`), and the calls inside a subshell, group, `if` or `case`, or a coprocess.
/// A loop's calls are left out: `ls | while read d; do f "$d"; done` walks a tree, one
/// call after the other (a function defined inside is a definition, not a call).
fn forked_calls(cmd: &ast::Command, names: &mut Vec<String>) {
    use ast::CompoundCommand as C;
    let mut lists: Vec<&ast::CompoundList> = Vec::new();
    match cmd {
        ast::Command::Simple(s) => names.extend(s.word_or_name.as_ref().map(|w| unquoted(&w.value))),
        ast::Command::Compound(compound, _) => match compound {
            C::Subshell(s) => lists.push(&s.list),
            C::BraceGroup(b) => lists.push(&b.list),
            C::IfClause(i) => {
                lists.extend([&i.condition, &i.then]);
                for e in i.elses.iter().flatten() {
                    lists.extend(e.condition.iter().chain([&e.body]));
                }
            }
            C::CaseClause(c) => lists.extend(c.cases.iter().filter_map(|i| i.cmd.as_ref())),
            C::Coprocess(c) => forked_calls(&c.body, names),
            C::ForClause(_) | C::ArithmeticForClause(_) | C::WhileClause(_) | C::UntilClause(_) | C::Arithmetic(_) => {}
        },
        _ => {}
    }
    for ast::CompoundListItem(and_or, _) in lists.into_iter().flat_map(|l| &l.0) {
        let chain = std::iter::once(&and_or.first).chain(and_or.additional.iter().map(|a| match a {
            ast::AndOr::And(p) | ast::AndOr::Or(p) => p,
        }));
        for c in chain.flat_map(|p| p.seq.iter()) {
            forked_calls(c, names);
        }
    }
}

/// The strongly connected component of each of `n` nodes joined by `edges` (Kosaraju's
/// algorithm, without recursion: a chain of calls may be thousands long).
fn components(n: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    let (mut out, mut into) = (vec![Vec::new(); n], vec![Vec::new(); n]);
    for &(a, b) in edges {
        out[a].push(b);
        into[b].push(a);
    }
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    for start in 0..n {
        if std::mem::replace(&mut seen[start], true) {
            continue;
        }
        let mut stack = vec![(start, 0)];
        while let Some((node, next)) = stack.last_mut() {
            if let Some(&to) = out[*node].get(*next) {
                *next += 1;
                if !std::mem::replace(&mut seen[to], true) {
                    stack.push((to, 0));
                }
            } else {
                order.push(*node);
                stack.pop();
            }
        }
    }
    let mut component = vec![usize::MAX; n];
    let mut count = 0;
    for &start in order.iter().rev() {
        if component[start] != usize::MAX {
            continue;
        }
        count += 1;
        component[start] = count;
        let mut stack = vec![start];
        while let Some(node) = stack.pop() {
            for &from in &into[node] {
                if component[from] == usize::MAX {
                    component[from] = count;
                    stack.push(from);
                }
            }
        }
    }
    component
}

/// A command word without its quotes (`"f"`, `\f` call `f`).
fn unquoted(word: &str) -> String {
    word.chars().filter(|c| !matches!(c, '"' | '\'' | '\\')).collect()
}

/// A shell variable's name: a letter or `_`, then letters, digits and `_`.
pub(crate) fn shell_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The target of `>&` that names a descriptor, not a file: `2`, `3-` (moved) or `-`
/// (closed).
fn names_descriptor(target: &str) -> bool {
    let digits = target.strip_suffix('-').unwrap_or(target);
    digits.is_empty() || digits.bytes().all(|b| b.is_ascii_digit())
}

/// Whether a `for` loop walks one command substitution listing processes, init among
/// them ([`crate::rules::lists_init`]).
fn loops_over_init(f: &ast::ForClauseCommand) -> bool {
    matches!(f.values.as_deref(), Some([value]) if lists_init(&value.value))
}

/// Whether a word that is only a command substitution lists processes, init among them
/// (`$(ps -e -o pid=)`; [`crate::rules::lists_init`]).
pub(crate) fn lists_init(text: &str) -> bool {
    substitution_code(text).is_some_and(|code| code_lists_init(&code))
}

/// Whether the first stages of a pipeline list processes, init among them (`ps aux |
/// awk '{print $2}' | xargs kill`).
fn pipes_init(stages: &[ast::Command]) -> bool {
    let first = stages[0].to_string();
    let lister = ["ps ", "pgrep ", "pidof "]
        .iter()
        .any(|p| first.trim_start().starts_with(p));
    lister && code_lists_init(&stages.iter().map(ToString::to_string).collect::<Vec<_>>().join(" | "))
}

/// What a pipeline stage surely prints: `echo WORDS…` (no option, every word literal, no
/// character the shell or echo could still expand) is that text.
fn literal_output(stage: &ast::Command) -> Option<Stdin> {
    let ast::Command::Simple(simple) = stage else {
        return None;
    };
    if simple.prefix.is_some() {
        return None;
    }
    let w = Walk::line(&stage.to_string(), 0);
    let [exec] = w.execs.as_slice() else { return None };
    if !w.problems.is_empty() || !exec.writes.is_empty() {
        return None;
    }
    // (Words the outer shell could still expand, or an `echo` that decodes backslashes —
    // dash's, zsh's, bash's with xpg_echo — make the text other than written.)
    if stage.to_string().contains(['{', '}', '\\', '*', '?', '[', '$', '`']) {
        return None;
    }
    let words: Option<Vec<&str>> = exec.argv.iter().map(Arg::lit).collect();
    match words?.as_slice() {
        ["echo", rest @ ..] if rest.iter().all(|w| !w.starts_with('-')) => {
            Some(Stdin::Text(format!("{}\n", rest.join(" "))))
        }
        _ => None,
    }
}

/// Whether a pipeline stage is a `find` that only lists build leftovers below the
/// project (no action of its own).
fn lists_leftovers(stage: &ast::Command) -> bool {
    let w = Walk::line(&stage.to_string(), 0);
    let [exec] = w.execs.as_slice() else { return false };
    if !w.problems.is_empty() || exec.argv.first().and_then(Arg::lit) != Some("find") {
        return false;
    }
    // What it prints must be the matches themselves, every one named: no `-o` branch
    // (one without a name test prints everything), no `-printf`/`-ls`, no `--` before
    // the roots.
    let prints_otherwise = exec.argv[1..].iter().any(|a| {
        matches!(
            a.raw(),
            "-o" | "-or" | "," | "--" | "-printf" | "-fprintf" | "-ls" | "-fls" | "-prune" | "-not" | "!"
        )
    });
    let f = crate::rules::find(&exec.argv[1..]);
    !prints_otherwise && !f.deletes && f.execs.is_empty() && f.writes.is_empty() && crate::rules::leftovers_only(&f)
}

fn code_lists_init(code: &str) -> bool {
    let w = Walk::line(code, 0);
    let pipeline: Option<Vec<Vec<&str>>> = w.execs.iter().map(|e| e.argv.iter().map(Arg::lit).collect()).collect();
    w.problems.is_empty() && pipeline.is_some_and(|p| crate::rules::lists_init(&p))
}

/// The code of a word that is only a command substitution (`$(…)`, backquoted, or either
/// in double quotes).
fn substitution_code(text: &str) -> Option<String> {
    let pieces = word::parse(text, &options()).ok()?;
    let code = match pieces.as_slice() {
        [p] => match &p.piece {
            WordPiece::CommandSubstitution(code) | WordPiece::BackquotedCommandSubstitution(code) => code,
            WordPiece::DoubleQuotedSequence(inner) => match inner.as_slice() {
                [
                    WordPieceWithSource {
                        piece: WordPiece::CommandSubstitution(code),
                        ..
                    },
                ] => code,
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    };
    Some(code.clone())
}

/// The name a word is made of, double-quoted: `"$d"`, `"${d}"`.
fn quoted_name(raw: &str) -> Option<&str> {
    let inner = raw.strip_prefix("\"$")?.strip_suffix('"')?;
    let name = inner
        .strip_prefix('{')
        .and_then(|n| n.strip_suffix('}'))
        .unwrap_or(inner);
    Some(name).filter(|n| shell_name(n))
}

/// The path a word that is only `$(mktemp …)` (or its backquoted or double-quoted
/// form) prints, when its arguments say.
fn mktemp_of(text: &str) -> Option<String> {
    let code = substitution_code(text)?;
    let w = Walk::line(&code, 0);
    match (w.problems.as_slice(), w.execs.as_slice()) {
        ([], [e]) if e.argv.first().and_then(Arg::lit) == Some("mktemp") && e.writes.is_empty() => {
            let args: Option<Vec<&str>> = e.argv[1..].iter().map(Arg::lit).collect();
            scope::mktemp_path(&args?)
        }
        _ => None,
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

#[cfg(test)]
mod tests {
    use super::shell_name;

    #[test]
    fn shell_variable_names() {
        for (name, want) in [
            ("d", true),
            ("_ip", true),
            ("PATH2", true),
            ("", false),
            ("2x", false),
            ("a-b", false),
            ("a[0]", false),
            ("$n", false),
            ("\"d", false),
            ("é", false),
        ] {
            assert_eq!(shell_name(name), want, "{name:?}");
        }
    }
}
