use super::*;
use crate::guardrail_rules::RuleSource;

fn t(raw: &str) -> Target {
    parse_target(raw).unwrap_or_else(|e| panic!("{raw}: {}", e.message))
}

#[test]
fn targets_are_normalised() {
    let cases: &[(&str, &str)] = &[
        ("example.com", "example.com:443"),
        ("EXAMPLE.com.", "example.com:443"),
        ("https://Example.COM/path?q=1", "example.com:443"),
        ("http://example.com", "example.com:80"),
        ("ws://example.com:8080/x", "example.com:8080"),
        ("example.com:22", "example.com:22"),
        ("http://allowed.com@evil.com/", "evil.com:80"),
        ("https://user:pw@evil.com:444", "evil.com:444"),
        ("bücher.example", "xn--bcher-kva.example:443"),
        ("2130706433", "127.0.0.1:443"),
        ("0177.0.0.1:80", "127.0.0.1:80"),
        ("http://0x7f.1/", "127.0.0.1:80"),
        ("[::ffff:127.0.0.1]:8080", "127.0.0.1:8080"),
        ("[::1]", "[::1]:443"),
        ("http://[2001:DB8::1]:81/", "[2001:db8::1]:81"),
    ];
    for (raw, want) in cases {
        assert_eq!(t(raw).to_string(), *want, "{raw}");
    }
}

#[test]
fn unreadable_targets_are_refused() {
    for raw in [
        "",
        "   ",
        "allowed.com@evil.com",
        "example.com/path",
        "ftp://example.com/",
        "file:///etc/passwd",
        "exa mple.com",
        "example.com:0",
        "example.com:99999",
        "example..com",
        "-x",
        "a-.example.com",
        "http://",
        "a\u{0}b.com",
        "exa$mple.com",
    ] {
        let e = parse_target(raw).expect_err(raw);
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{raw}");
        assert_eq!(e.field.as_deref(), Some("target"), "{raw}");
    }
    assert!(parse_target(&"a".repeat(MAX_TARGET + 1)).is_err());
}

#[test]
fn entries_parse_or_say_why_not() {
    let ok: &[(&str, Pattern, Ports)] = &[
        ("example.com", Pattern::Exact("example.com".into()), Ports::Web),
        ("Example.COM.", Pattern::Exact("example.com".into()), Ports::Web),
        ("*.example.com", Pattern::Subdomains("example.com".into()), Ports::Web),
        (
            "example.com:8443",
            Pattern::Exact("example.com".into()),
            Ports::One(8443),
        ),
        ("example.com:*", Pattern::Exact("example.com".into()), Ports::Any),
        ("127.0.0.2", Pattern::Net("127.0.0.2/32".parse().unwrap()), Ports::Web),
        (
            "127.0.0.2:9000",
            Pattern::Net("127.0.0.2/32".parse().unwrap()),
            Ports::One(9000),
        ),
        ("10.1.2.3/8", Pattern::Net("10.0.0.0/8".parse().unwrap()), Ports::Web),
        ("[::1]:*", Pattern::Net("::1/128".parse().unwrap()), Ports::Any),
        ("fd00::/8", Pattern::Net("fd00::/8".parse().unwrap()), Ports::Web),
        ("@documentation", Pattern::Category("documentation".into()), Ports::Web),
    ];
    for (raw, pattern, ports) in ok {
        let e = Entry::parse(raw).unwrap_or_else(|m| panic!("{raw}: {m}"));
        assert_eq!((&e.pattern, e.ports), (pattern, *ports), "{raw}");
    }
    for raw in [
        "*",
        "**",
        "*.com",
        "a.*.com",
        "ex*ample.com",
        "*.*.com",
        "example.com:0",
        "example.com:x",
        "[::1]x",
        "[::1",
        "@",
        "@Docs",
        "",
        "allowed.com@evil.com",
        "*.127.0.0.1",
    ] {
        assert!(Entry::parse(raw).is_err(), "{raw} should be refused");
    }
}

fn entries(list: &[&str]) -> Vec<Entry> {
    list.iter().map(|s| Entry::parse(s).unwrap()).collect()
}

#[test]
fn the_decision_table() {
    use DefaultAction::{Allow, Deny};
    use Reason::*;
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    // (default, allow, deny, target, resolved, reason, admitted)
    type Case<'a> = (
        DefaultAction,
        &'a [&'a str],
        &'a [&'a str],
        &'a str,
        &'a [&'a str],
        Reason,
        &'a [&'a str],
    );
    let cases: &[Case] = &[
        (Deny, &["example.com"], &[], "example.com", &[], Allowlisted, &[]),
        (Deny, &["example.com"], &[], "EXAMPLE.com.", &[], Allowlisted, &[]),
        (Deny, &["example.com"], &[], "www.example.com", &[], NotAllowlisted, &[]),
        (Deny, &["*.example.com"], &[], "a.example.com", &[], Allowlisted, &[]),
        (Deny, &["*.example.com"], &[], "a.b.example.com", &[], Allowlisted, &[]),
        (Deny, &["*.example.com"], &[], "example.com", &[], NotAllowlisted, &[]),
        (
            Deny,
            &["*.example.com"],
            &[],
            "evil-example.com",
            &[],
            NotAllowlisted,
            &[],
        ),
        (
            Deny,
            &["*.example.com"],
            &[],
            "example.com.evil.net",
            &[],
            NotAllowlisted,
            &[],
        ),
        (Deny, &["*.example.com"], &[], "xexample.com", &[], NotAllowlisted, &[]),
        (Deny, &["example.com"], &[], "example.com:22", &[], NotAllowlisted, &[]),
        (Deny, &["example.com"], &[], "http://example.com", &[], Allowlisted, &[]),
        (Deny, &["example.com:22"], &[], "example.com:22", &[], Allowlisted, &[]),
        (Deny, &["example.com:*"], &[], "example.com:22", &[], Allowlisted, &[]),
        (
            Deny,
            &["*.example.com"],
            &["bad.example.com"],
            "bad.example.com",
            &[],
            Denylisted,
            &[],
        ),
        (
            Allow,
            &["bad.example.com"],
            &["bad.example.com"],
            "bad.example.com",
            &[],
            Denylisted,
            &[],
        ),
        (Allow, &[], &[], "anything.org", &[], DefaultAllow, &[]),
        (Allow, &[], &[], "anything.org:22", &[], DefaultAllow, &[]),
        (
            Deny,
            &["bücher.example"],
            &[],
            "xn--bcher-kva.example",
            &[],
            Allowlisted,
            &[],
        ),
        // IP literals: listed or not; reserved ones only through an address entry.
        (Deny, &[], &[], "93.184.216.34", &[], NotAllowlisted, &[]),
        (Allow, &[], &[], "93.184.216.34", &[], DefaultAllow, &[]),
        (Allow, &[], &[], "127.0.0.1", &[], ReservedAddress, &[]),
        (Allow, &[], &[], "2130706433", &[], ReservedAddress, &[]),
        (Allow, &[], &[], "0177.0.0.1", &[], ReservedAddress, &[]),
        (Allow, &[], &[], "[::ffff:127.0.0.1]", &[], ReservedAddress, &[]),
        (Allow, &[], &[], "[::1]", &[], ReservedAddress, &[]),
        (Allow, &[], &[], "169.254.169.254", &[], ReservedAddress, &[]),
        (Allow, &[], &[], "[fd00:ec2::254]", &[], ReservedAddress, &[]),
        (Allow, &[], &[], "[64:ff9b::7f00:1]", &[], ReservedAddress, &[]),
        (Allow, &[], &[], "[2002:7f00:1::]", &[], ReservedAddress, &[]),
        (Deny, &["127.0.0.2:*"], &[], "127.0.0.2:9000", &[], Allowlisted, &[]),
        (Deny, &["127.0.0.0/8:*"], &[], "127.0.0.3:9000", &[], Allowlisted, &[]),
        (
            Deny,
            &["127.0.0.2:9000"],
            &[],
            "127.0.0.2:9001",
            &[],
            NotAllowlisted,
            &[],
        ),
        // Resolved addresses: a name entry never lets a reserved address through.
        (
            Deny,
            &["example.com"],
            &[],
            "example.com",
            &["93.184.216.34"],
            Allowlisted,
            &["93.184.216.34"],
        ),
        (
            Deny,
            &["example.com"],
            &[],
            "example.com",
            &["127.0.0.1"],
            NoAllowedAddress,
            &[],
        ),
        (
            Deny,
            &["example.com"],
            &[],
            "example.com",
            &["169.254.169.254"],
            NoAllowedAddress,
            &[],
        ),
        (
            Deny,
            &["example.com"],
            &[],
            "example.com",
            &["10.1.2.3"],
            NoAllowedAddress,
            &[],
        ),
        (
            Deny,
            &["example.com"],
            &[],
            "example.com",
            &["::ffff:10.0.0.1"],
            NoAllowedAddress,
            &[],
        ),
        (
            Deny,
            &["example.com"],
            &[],
            "example.com",
            &["10.0.0.1", "1.2.3.4"],
            Allowlisted,
            &["1.2.3.4"],
        ),
        (
            Deny,
            &["example.com:*", "127.0.0.2:*"],
            &[],
            "example.com:8080",
            &["127.0.0.2"],
            Allowlisted,
            &["127.0.0.2"],
        ),
        (
            Deny,
            &["example.com:*", "127.0.0.2:80"],
            &[],
            "example.com:8080",
            &["127.0.0.2"],
            NoAllowedAddress,
            &[],
        ),
        (
            Allow,
            &[],
            &["1.2.3.0/24"],
            "example.com",
            &["1.2.3.4"],
            NoAllowedAddress,
            &[],
        ),
        (Allow, &[], &["1.2.3.0/24"], "1.2.3.4", &[], Denylisted, &[]),
        // A deny entry without a port denies every port.
        (Allow, &[], &["evil.example"], "evil.example:8443", &[], Denylisted, &[]),
        (Allow, &[], &["evil.example"], "evil.example:22", &[], Denylisted, &[]),
        (
            Allow,
            &[],
            &["93.184.216.34"],
            "93.184.216.34:8080",
            &[],
            Denylisted,
            &[],
        ),
        // IPv6 forms embedding a denied IPv4 address are that address.
        (
            Allow,
            &[],
            &["93.184.216.34"],
            "[64:ff9b::5db8:d822]",
            &[],
            Denylisted,
            &[],
        ),
        (
            Allow,
            &[],
            &["93.184.216.34"],
            "example.com",
            &["2002:5db8:d822::1"],
            NoAllowedAddress,
            &[],
        ),
        (Allow, &[], &[], "[64:ff9b:1::7f00:1]", &[], ReservedAddress, &[]),
        (Allow, &[], &[], "[2001:db8::1]", &[], ReservedAddress, &[]),
        (Allow, &[], &[], "[2001::1]", &[], ReservedAddress, &[]),
        (Allow, &[], &[], "[fec0::1]", &[], ReservedAddress, &[]),
    ];
    for (default, allow, deny, target, resolved, reason, admitted) in cases {
        let resolved: Vec<IpAddr> = resolved.iter().map(|s| ip(s)).collect();
        let resolved = (!resolved.is_empty()).then_some(resolved.as_slice());
        let d = decide(*default, &entries(allow), &entries(deny), &t(target), resolved);
        assert_eq!(
            d.reason, *reason,
            "{target} under {default:?} allow {allow:?} deny {deny:?} resolved {resolved:?}"
        );
        let admitted: Vec<IpAddr> = admitted.iter().map(|s| ip(s)).collect();
        assert_eq!(d.addresses, admitted, "{target}");
        assert_eq!(d.allowed(), reason.allowed());
    }
}

#[test]
fn reserved_ranges() {
    for s in [
        "0.0.0.0",
        "10.0.0.1",
        "100.64.0.1",
        "127.255.0.1",
        "169.254.169.254",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "192.0.0.8",
        "198.18.0.1",
        "224.0.0.1",
        "255.255.255.255",
        "::",
        "::1",
        "fc00::1",
        "fd00:ec2::254",
        "fe80::1",
        "ff02::1",
        "::ffff:192.168.0.1",
        "::127.0.0.1",
        "64:ff9b::a00:1",
        "2002:a00:1::",
    ] {
        assert!(is_reserved(s.parse().unwrap()), "{s} is reserved");
    }
    for s in [
        "1.1.1.1",
        "172.32.0.1",
        "100.128.0.1",
        "192.0.2.1",
        "2606:4700::1111",
        "::ffff:8.8.8.8",
        "2002:808:808::",
    ] {
        assert!(!is_reserved(s.parse().unwrap()), "{s} is public");
    }
}

fn profile(policy: &str, trust: u8, required: &[&str]) -> EgressProfile {
    EgressProfile {
        profile: "p".into(),
        policy: policy.into(),
        trust_level: trust,
        required: required.iter().map(|s| s.to_string()).collect(),
    }
}

fn check(raw: &str) -> Check {
    validate_check(CheckNetworkAccessRequest {
        target: raw.into(),
        addresses: None,
        resolve_next: false,
    })
    .unwrap()
}

#[test]
fn resolved_addresses_none_or_empty() {
    let allow = entries(&["example.com"]);
    let d = decide(DefaultAction::Deny, &allow, &[], &t("example.com"), Some(&[]));
    assert_eq!(d.reason, Reason::NotResolved, "a name that resolved to nothing");
    let d = decide(DefaultAction::Deny, &allow, &[], &t("example.com"), None);
    assert_eq!(d.reason, Reason::Allowlisted, "not resolved yet: the name decides");
    let e = validate_check(CheckNetworkAccessRequest {
        target: "example.com".into(),
        addresses: Some(vec![]),
        resolve_next: true,
    })
    .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("resolve_next"));
    let many = validate_check(CheckNetworkAccessRequest {
        target: "example.com".into(),
        addresses: Some((0..100).map(|i| format!("1.1.1.{i}")).collect()),
        resolve_next: false,
    })
    .unwrap();
    assert_eq!(many.addresses.unwrap().len(), MAX_ADDRESSES);
}

fn allowed(who: &EgressProfile, rows: &[PolicyRow], raw: &str) -> bool {
    let cats = categories(&["coord.example.net".into()], &[]);
    let rules = Rules::new(who, &merge(rows), &cats);
    answer(&rules, &check(raw)).is_ok()
}

#[test]
fn the_builtin_policies() {
    let cases: &[(&str, u8, &str, bool)] = &[
        ("full_access", 3, "anything.org", true),
        ("full_access", 3, "anything.org:22", true),
        ("full_access", 3, "127.0.0.1:5432", false),
        ("documentation_only", 2, "docs.python.org", true),
        ("documentation_only", 2, "github.com", true),
        ("documentation_only", 2, "coord.example.net", true),
        ("documentation_only", 2, "pypi.org", false),
        ("package_managers_and_docs", 3, "pypi.org", true),
        ("package_managers_and_docs", 3, "registry.npmjs.org", true),
        ("package_managers_and_docs", 3, "evil.com", false),
        ("coordination_only", 2, "coord.example.net", true),
        ("coordination_only", 2, "github.com", false),
        ("configurable", 0, "github.com", true),
        ("configurable", 0, "pypi.org", false),
        ("configurable", 1, "pypi.org", true),
        ("configurable", 1, "s3.amazonaws.com", false),
        ("configurable", 2, "s3.amazonaws.com", true),
        ("configurable", 2, "amazonaws.com", false),
        ("deny_all", 0, "github.com", false),
        ("deny_all", 0, "coord.example.net", false),
        ("no_such_policy", 4, "github.com", false),
    ];
    for (policy, trust, target, want) in cases {
        assert_eq!(
            allowed(&profile(policy, *trust, &[]), &[], target),
            *want,
            "{policy} trust {trust} {target}"
        );
    }
    // A profile's required domains are allowed whatever its policy.
    assert!(allowed(
        &profile("deny_all", 0, &["api.example.org"]),
        &[],
        "api.example.org"
    ));
}

#[test]
fn rows_replace_and_add_policies() {
    let at = crate::Timestamp::from_timestamp(1_700_000_000, 0).unwrap();
    let row = |name: &str, default, allow: &[&str], deny: &[&str]| PolicyRow {
        policy: NetworkPolicy {
            name: name.into(),
            description: String::new(),
            default,
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
            trust_defaults: false,
        },
        updated_by: "admin".into(),
        updated_at: at,
    };
    let rows = [
        row("full_access", DefaultAction::Allow, &[], &["*.evil.com"]),
        row(
            "team",
            DefaultAction::Deny,
            &["@package_managers", "internal.example:8443"],
            &[],
        ),
    ];
    let merged = merge(&rows);
    assert_eq!(
        merged.iter().find(|p| p.policy.name == "full_access").unwrap().source,
        RuleSource::Modified
    );
    assert_eq!(
        merged.iter().find(|p| p.policy.name == "team").unwrap().source,
        RuleSource::Custom
    );
    assert_eq!(
        merged.iter().find(|p| p.policy.name == "deny_all").unwrap().source,
        RuleSource::Builtin
    );
    assert!(!allowed(&profile("full_access", 3, &[]), &rows, "a.evil.com"));
    assert!(allowed(&profile("full_access", 3, &[]), &rows, "good.com"));
    assert!(allowed(&profile("team", 1, &[]), &rows, "pypi.org"));
    assert!(allowed(&profile("team", 1, &[]), &rows, "internal.example:8443"));
    assert!(!allowed(&profile("team", 1, &[]), &rows, "internal.example"));
}

#[test]
fn a_refusal_answers_domain_blocked_and_logs_itself() {
    let who = profile("documentation_only", 2, &[]);
    let cats = categories(&[], &[]);
    let rules = Rules::new(&who, &merge(&[]), &cats);
    let e = answer(&rules, &check("https://Evil.example.com/x")).unwrap_err();
    assert_eq!(e.code, ErrorCode::DomainBlocked);
    assert_eq!(
        e.details.get("domain").and_then(Value::as_str),
        Some("evil.example.com")
    );
    let row = NetworkAccess::of_refusal("a1", &e).unwrap();
    assert_eq!(
        (row.host.as_str(), row.port, row.allowed, row.alert),
        ("evil.example.com", 443, false, true)
    );
    assert_eq!(row.reason, "not_allowlisted");
    assert_eq!(row.policy, "documentation_only");
    let ok = answer(&rules, &check("docs.rs")).unwrap();
    let row = NetworkAccess::of_pass("a1", &ok);
    assert!(row.allowed && !row.alert);
    assert_eq!(row.rule.as_deref(), Some("docs.rs"));
}

#[test]
fn policies_are_validated() {
    let cats = categories(&[], &[]);
    let p = |allow: &[&str]| NetworkPolicy {
        name: "team".into(),
        description: "d".into(),
        default: DefaultAction::Deny,
        allow: allow.iter().map(|s| s.to_string()).collect(),
        deny: vec![],
        trust_defaults: false,
    };
    let ok = validate_policy(p(&[" Example.com ", "@documentation"]), &cats).unwrap();
    assert_eq!(ok.allow, ["Example.com", "@documentation"]);
    let e = validate_policy(p(&["ok.com", "*"]), &cats).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("allow[1]"));
    let e = validate_policy(p(&["@nope"]), &cats).unwrap_err();
    assert!(e.message.contains("no category nope"), "{}", e.message);
    let mut bad = p(&[]);
    bad.name = "Bad Name".into();
    assert_eq!(validate_policy(bad, &cats).unwrap_err().field.as_deref(), Some("name"));
    let many: Vec<String> = (0..=MAX_ENTRIES).map(|i| format!("h{i}.com")).collect();
    let mut big = p(&[]);
    big.allow = many;
    assert!(validate_policy(big, &cats).is_err());
    for b in builtin_policies() {
        validate_policy(b.clone(), &cats).unwrap_or_else(|e| panic!("{}: {}", b.name, e.message));
    }
    for c in &cats {
        for d in &c.domains {
            Entry::parse(d).unwrap_or_else(|m| panic!("{}: {m}", c.name));
        }
    }
}

#[test]
fn address_rules() {
    let r = AddressRules::of(&entries(&["127.0.0.2:*", "example.com"]), &entries(&["1.2.3.4"]));
    assert!(r.admits("127.0.0.2".parse().unwrap(), 9000));
    assert!(!r.admits("127.0.0.3".parse().unwrap(), 9000));
    assert!(!r.admits("1.2.3.4".parse().unwrap(), 443));
    assert!(
        !r.admits("1.2.3.4".parse().unwrap(), 8443),
        "a deny entry without a port: every port"
    );
    assert!(r.admits("8.8.8.8".parse().unwrap(), 22));
}
