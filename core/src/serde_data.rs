//! The `serde` feature's wire shapes for types whose fields are not their data.

use alloc::string::String;

use crate::lease::LeaseInfo;
use crate::time::Timestamp;

/// A [`LeaseInfo`] as it is serialized: `{"name", "owner", "token", "deadline"}`, the
/// deadline in nanoseconds on the engine's clock.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct LeaseData {
    name: String,
    owner: String,
    token: u64,
    deadline: Timestamp,
}

impl From<LeaseInfo> for LeaseData {
    fn from(lease: LeaseInfo) -> Self {
        LeaseData {
            name: lease.name().into(),
            owner: lease.owner().into(),
            token: lease.token(),
            deadline: lease.deadline(),
        }
    }
}

impl From<LeaseData> for LeaseInfo {
    fn from(data: LeaseData) -> Self {
        LeaseInfo::new(&data.name, &data.owner, data.token, data.deadline)
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;
    use alloc::vec;
    use core::time::Duration;

    use crate::{InputProblem, LeaseInfo, LockError, Snapshot, StaleToken, Timestamp, Waiting};

    fn round_trip<T>(value: &T) -> (String, T)
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        let json = serde_json::to_string(value).unwrap();
        (json.clone(), serde_json::from_str(&json).unwrap())
    }

    use alloc::string::String;

    #[test]
    fn leases_and_snapshots_round_trip_as_plain_data() {
        let lease = LeaseInfo::new(
            "invoice/\"1001\"\n",
            "wörker\0-2",
            7,
            Timestamp::from_millis(1_500),
        );
        let (json, back) = round_trip(&lease);
        assert_eq!(
            json,
            r#"{"name":"invoice/\"1001\"\n","owner":"wörker\u0000-2","token":7,"deadline":1500000000}"#
        );
        assert_eq!(back, lease);
        assert_eq!((back.name(), back.owner()), (lease.name(), lease.owner()));
        let mut snapshot = Snapshot::default();
        snapshot.held.push(lease);
        snapshot
            .waiting
            .push(Waiting::new("invoice/\"1001\"\n", "w-3"));
        let (json, back) = round_trip(&snapshot);
        assert!(json.starts_with(r#"{"held":[{"name""#), "{json}");
        assert_eq!(back, snapshot);
    }

    #[test]
    fn errors_round_trip_with_their_data() {
        let errors = vec![
            LockError::InvalidName {
                name: "a\nb".into(),
                problem: InputProblem::ControlCharacter { index: 1, ch: '\n' },
            },
            LockError::Expired {
                name: "job".into(),
                token: 3,
                ttl: Duration::from_millis(100),
                deadline: Timestamp::from_millis(5),
                now: Timestamp::MAX,
            },
            LockError::InvalidTtl {
                ttl: Duration::ZERO,
                problem: crate::TtlProblem::Zero,
            },
            LockError::Unavailable {
                reason: "redis did not answer within 2s".into(),
            },
        ];
        for err in errors {
            let (_, back) = round_trip(&err);
            assert_eq!(back.to_string(), err.to_string());
            assert_eq!(back, err);
        }
        let stale = StaleToken {
            token: 1,
            highest: 9,
        };
        assert_eq!(round_trip(&stale).1, stale);
    }
}
