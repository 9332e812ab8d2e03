//! Property test: no input reaches a panic, and every refusal is the one the rules name.
//!
//! Arbitrary names (any chars, control characters and `alk:` prefixes included, up to far
//! past the limit), owners and durations go into `try_lock`, `holder` and `acquire`; the
//! answer must match an independent classification of the input, and a refused call must
//! leave the registry exactly as it was.

use std::time::Duration;

use alkstore_mem::{Config, InputProblem, LockError, LockRegistry, ManualClock};
use proptest::prelude::*;

const MAX_NAME: usize = 40;
const MAX_OWNER: usize = 24;

/// What the rules say about a request, in the order errors take precedence.
fn classify(name: &str, owner: &str, ttl: Duration) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > MAX_NAME || name.chars().any(char::is_control) {
        return Err("InvalidName");
    }
    if name.len() >= 4 && name.as_bytes()[..4].eq_ignore_ascii_case(b"alk:") {
        return Err("ReservedName");
    }
    if owner.is_empty() || owner.len() > MAX_OWNER {
        return Err("InvalidOwner");
    }
    if ttl.is_zero() {
        return Err("InvalidTtl");
    }
    Ok(())
}

fn kind(err: &LockError) -> &'static str {
    match err {
        LockError::InvalidName { problem, .. } => {
            // The problem named must be a real one.
            assert!(matches!(
                problem,
                InputProblem::Empty
                    | InputProblem::TooLong { .. }
                    | InputProblem::ControlCharacter { .. }
            ));
            "InvalidName"
        }
        LockError::ReservedName { .. } => "ReservedName",
        LockError::InvalidOwner { .. } => "InvalidOwner",
        LockError::InvalidTtl { .. } => "InvalidTtl",
        other => panic!("unexpected {other:?}"),
    }
}

fn name_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,60}",
        "(alk:|ALK:|aLk:|alk)[a-z]{0,8}",
        "[a-z/\\-0-9]{1,50}",
        "[\\x00-\\x1f\\x7f\u{80}-\u{9f}a-z]{1,10}",
        "[é✓🚀ü\u{a0}\u{bf}a-z]{1,12}",
    ]
}

fn ttl_strategy() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        Just(Duration::MAX),
        (0u64..u64::MAX, 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
        (0u64..10_000).prop_map(Duration::from_millis),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn every_input_gets_the_answer_the_rules_give(
        name in name_strategy(),
        owner in ".{0,30}",
        ttl in ttl_strategy(),
    ) {
        let config = Config::default().with_max_name_len(MAX_NAME).with_max_owner_len(MAX_OWNER);
        let registry = LockRegistry::with_config(ManualClock::new(), config);
        let _other = registry.try_lock("someone-else", "x", Duration::from_secs(1)).unwrap().unwrap();
        let expected = classify(&name, &owner, ttl);

        match registry.try_lock(&name, &owner, ttl) {
            Ok(Some(lock)) => {
                prop_assert_eq!(expected, Ok(()));
                prop_assert_eq!((lock.name(), lock.owner()), (name.as_str(), owner.as_str()));
                prop_assert_eq!(registry.holder(&name).map(|h| h.token()), Some(lock.token()));
                prop_assert_eq!(lock.token(), 2);
            }
            Ok(None) => prop_assert!(false, "a fresh name was busy: {:?}", name),
            Err(err) => {
                prop_assert_eq!(Err(kind(&err)), expected);
                prop_assert!(err.to_string().len() < 200, "message too long: {}", err);
                // Refused: nothing changed. The next grant still gets token 2.
                prop_assert!(registry.holder(&name).is_none());
                let next = registry.try_lock("after", "x", Duration::from_secs(1)).unwrap().unwrap();
                prop_assert_eq!(next.token(), 2);
            }
        }

        // acquire answers the same at its first poll.
        let fut = registry.acquire(&name, &owner, ttl).timeout(Duration::ZERO);
        let answer = futures_lite::future::block_on(fut);
        match (answer, expected) {
            (Err(err), Err(kind_expected)) => prop_assert_eq!(kind(&err), kind_expected),
            (Ok(_), Ok(())) => {}
            (answer, expected) => prop_assert!(false, "acquire: {:?} vs {:?}", answer.map(|l| l.is_some()), expected),
        }
    }
}
