use super::*;
use chrono::{TimeZone, Utc};

fn now() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap()
}

fn input(key: &str, bytes: usize, critical: bool) -> EntryInput {
    EntryInput {
        key: key.into(),
        kind: EntryKind::Note,
        content: format!("{key} first line\n{}", "x".repeat(bytes)),
        critical,
    }
}

fn written(inputs: &[EntryInput]) -> Vec<Entry> {
    apply(Vec::new(), inputs, now()).unwrap()
}

#[test]
fn estimate_is_bytes_over_four_plus_framing() {
    assert_eq!(estimate_tokens("", ""), 4);
    assert_eq!(estimate_tokens("k", "abc"), 5);
    assert_eq!(estimate_tokens("k", "abcd"), 6);
    assert_eq!(estimate_tokens("", "é"), 5);
}

#[test]
fn under_budget_nothing_changes() {
    let e = written(&[input("a", 100, false), input("b", 100, false)]);
    let (out, over) = compact(e.clone(), 1000, now());
    assert_eq!(out, e);
    assert!(!over);
}

#[test]
fn rewriting_a_key_replaces_it_and_makes_it_newest_and_empty_removes() {
    let e = written(&[input("a", 10, false), input("b", 10, false)]);
    let e = apply(e, &[input("a", 20, true)], now()).unwrap();
    let keys: Vec<_> = {
        let mut v = e.clone();
        v.sort_by_key(|e| e.position);
        v.into_iter().map(|e| (e.key, e.critical)).collect()
    };
    assert_eq!(keys, [("b".to_string(), false), ("a".to_string(), true)]);
    let gone = apply(
        e,
        &[EntryInput {
            key: "b".into(),
            content: String::new(),
            ..Default::default()
        }],
        now(),
    )
    .unwrap();
    assert_eq!(gone.len(), 1);
}

#[test]
fn compaction_keeps_critical_and_newest_verbatim_and_fits() {
    let mut inputs: Vec<EntryInput> = (0..20).map(|i| input(&format!("e{i:02}"), 400, false)).collect();
    inputs[3].critical = true;
    let before = written(&inputs);
    let budget = 1000;
    let (out, over) = compact(before.clone(), budget, now());
    assert!(!over);
    assert!(context_tokens(&out) <= budget, "{}", context_tokens(&out));
    let by_key = |k: &str| out.iter().find(|e| e.key == k).unwrap();
    // Critical and newest entries are byte-identical.
    assert_eq!(by_key("e03").content, inputs[3].content);
    assert_eq!(by_key("e03").state, EntryState::Active);
    assert_eq!(by_key("e19").content, inputs[19].content);
    // Every changed entry keeps its original.
    for e in &out {
        if e.state != EntryState::Active {
            let i: usize = e.key[1..].parse().unwrap();
            assert_eq!(e.original.as_deref(), Some(inputs[i].content.as_str()));
        }
    }
    // The digest names what was folded.
    let digest = by_key(DIGEST_KEY);
    assert!(
        digest.content.contains("e00 (note): e00 first line"),
        "{}",
        digest.content
    );
    assert!(out.iter().any(|e| e.state == EntryState::Folded));
    // Idempotent.
    let (again, _) = compact(out.clone(), budget, now());
    assert_eq!(again, out);
    // Nothing is lost: every key is still there.
    assert_eq!(out.iter().filter(|e| e.kind != EntryKind::Digest).count(), 20);
    let r = result("s".into(), budget, out, false);
    assert!(r.tokens_before > r.tokens);
    assert!(r.compressed.iter().any(|c| c.key == "e00"));
    assert!(
        r.entries
            .iter()
            .all(|e| e.state != EntryState::Folded && e.original.is_none())
    );
}

#[test]
fn critical_over_budget_is_reported_never_cut() {
    let inputs: Vec<EntryInput> = (0..5).map(|i| input(&format!("c{i}"), 2000, true)).collect();
    let (out, over) = compact(written(&inputs), 1000, now());
    assert!(over);
    for (e, i) in out.iter().zip(&inputs) {
        assert_eq!(e.content, i.content);
        assert_eq!(e.state, EntryState::Active);
    }
}

#[test]
fn middle_truncate_respects_characters() {
    let s = "é".repeat(1000);
    let cut = middle_truncate(&s, 64);
    assert!(cut.contains("tokens elided"));
    assert!(cut.len() < 400);
    assert_eq!(middle_truncate("short", 64), "short");
}

#[test]
fn the_digest_is_coord_s_own() {
    let bad = UpdateWorkingMemoryRequest {
        entries: vec![EntryInput {
            key: "digest".into(),
            content: "x".into(),
            ..Default::default()
        }],
    };
    assert!(validate_update(bad, 1000).is_err());
    assert!(validate_update(UpdateWorkingMemoryRequest::default(), 1000).is_err());
}

#[test]
fn folded_entries_are_bounded() {
    let mut entries = Vec::new();
    for i in 0..(MAX_FOLDED + 100) {
        entries = apply(entries, &[input(&format!("k{i:04}"), 200, false)], now()).unwrap();
        entries = compact(entries, 300, now()).0;
    }
    let folded = entries.iter().filter(|e| e.state == EntryState::Folded).count();
    assert_eq!(folded, MAX_FOLDED);
    // The newest is still in the context, verbatim.
    let newest = format!("k{:04}", MAX_FOLDED + 99);
    assert!(entries.iter().any(|e| e.key == newest && e.state == EntryState::Active));
}
