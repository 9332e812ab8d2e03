//! The token-after-row-lock trap, with 8 concurrent clients: a grant that waited for a name's
//! row lock must get a larger token than the grant it waited behind. The engine takes the
//! token only after it holds the row lock. The same harness run against a hand-written
//! function that takes `nextval()` before the lock (the trap) finds tokens going back, which
//! shows that the check can fail.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore_pg::{PgConfig, PgLocks};

const CLIENTS: usize = 8;
const CYCLES: usize = 120;
const TTL: Duration = Duration::from_secs(30);

/// Checks a log of (event, token) lines in file order: no overlap, tokens increasing.
/// Returns the number of critical sections and the number of times a token went back.
fn check(log: &[(bool, i64)]) -> (usize, usize) {
    let mut inside = None;
    let mut last = 0;
    let (mut sections, mut back) = (0, 0);
    for &(enter, token) in log {
        if enter {
            assert_eq!(
                inside, None,
                "two holders at once: {token} entered inside {inside:?}"
            );
            if token <= last {
                back += 1;
            }
            last = token;
            inside = Some(token);
        } else {
            assert_eq!(inside, Some(token), "exit without its enter");
            inside = None;
            sections += 1;
        }
    }
    (sections, back)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_clients_on_one_name_get_tokens_in_grant_order() {
    let schema = common::fresh_schema();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        // Each client its own store: its own connections, as separate processes would have.
        let locks = PgLocks::connect_with(
            &common::url(),
            PgConfig::new().with_schema(&schema).with_pool_size(1),
        )
        .await
        .unwrap();
        let log = Arc::clone(&log);
        tasks.push(tokio::spawn(async move {
            let mut granted = 0;
            for cycle in 0..CYCLES {
                // Half the clients try, half wait in line: both grant paths meet.
                let lock = if client % 2 == 0 {
                    locks.try_lock("hot", "o", TTL).await.unwrap()
                } else if cycle % 3 == 0 {
                    locks.acquire("hot", "o", TTL).await.unwrap()
                } else {
                    locks
                        .acquire("hot", "o", TTL)
                        .timeout(Duration::ZERO)
                        .await
                        .unwrap()
                };
                let Some(lock) = lock else { continue };
                let token = i64::try_from(lock.token()).unwrap();
                log.lock().unwrap().push((true, token));
                log.lock().unwrap().push((false, token));
                assert!(lock.release().await.unwrap());
                granted += 1;
            }
            granted
        }));
    }
    let mut granted = 0;
    for task in tasks {
        granted += task.await.unwrap();
    }
    let log = log.lock().unwrap();
    let (sections, back) = check(&log);
    eprintln!("8 clients: {sections} grants on one name, tokens went back {back} times");
    assert_eq!(sections, granted);
    assert!(
        sections >= CYCLES,
        "the clients hardly got the name: {sections}"
    );
    assert_eq!(back, 0, "a later grant got a smaller token");
}

/// The trap, written on purpose: the token is taken before the row is locked (as an
/// `INSERT .. VALUES (nextval(..)) ON CONFLICT DO UPDATE .. WHERE lapsed` would), with a
/// sleep of up to 10 ms in between to widen the window (2 ms let a loaded machine's clients
/// run one after the other, and the trap went unseen once). The harness sees tokens go back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_harness_catches_a_token_taken_before_the_row_lock() {
    let schema = common::fresh_schema();
    let url = common::url();
    let setup = common::client(&url).await;
    setup
        .batch_execute(&format!(
            r#"CREATE SCHEMA "{schema}";
            CREATE SEQUENCE "{schema}".seq;
            CREATE TABLE "{schema}".lease (name text PRIMARY KEY, token bigint NOT NULL);
            CREATE FUNCTION "{schema}".bad_lock(p_name text) RETURNS bigint
            LANGUAGE plpgsql AS $$
            DECLARE v_token bigint := nextval('"{schema}".seq'); v_got bigint;
            BEGIN
              PERFORM pg_sleep(random() * 0.010);
              INSERT INTO "{schema}".lease VALUES (p_name, v_token)
                ON CONFLICT (name) DO NOTHING RETURNING token INTO v_got;
              RETURN v_got;
            END $$;"#
        ))
        .await
        .unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let client = common::client(&url).await;
        let (schema, log) = (schema.clone(), Arc::clone(&log));
        tasks.push(tokio::spawn(async move {
            let lock = format!(r#"SELECT "{schema}".bad_lock('hot')"#);
            let unlock =
                format!(r#"DELETE FROM "{schema}".lease WHERE name = 'hot' AND token = $1"#);
            for _ in 0..CYCLES / 2 {
                let token: Option<i64> = client.query_one(&lock, &[]).await.unwrap().get(0);
                let Some(token) = token else { continue };
                log.lock().unwrap().push((true, token));
                log.lock().unwrap().push((false, token));
                client.execute(&unlock, &[&token]).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let (sections, back) = check(&log.lock().unwrap());
    eprintln!("the trap on purpose: {sections} grants, tokens went back {back} times");
    assert!(
        back > 0,
        "the harness did not see the trap in {sections} grants"
    );
}
