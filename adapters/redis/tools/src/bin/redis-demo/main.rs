//! `make demo-redis`: three OS processes share the lock `invoice/1001` on one Redis.
//!
//! - `worker-a` locks the invoice (1 s lease), writes a draft, and stalls for 1.6 s: a GC
//!   pause, a frozen VM.
//! - `worker-b` and `worker-c` wait in line, in that order. At worker-a's deadline (on the
//!   server's clock) the lease goes to worker-b, with a larger fencing token; it writes and
//!   releases, and the release hands the lease straight to worker-c.
//! - worker-c runs a payment longer than its lease; `keep_alive` renews the lease meanwhile.
//! - worker-a wakes up and writes with its old token: the invoice store refuses it.
//!
//! This process, the coordinator, starts the workers and is the invoice store they write to
//! (over their pipes): it keeps the core's [`Fence`], which refuses a write whose token is
//! older than one it has already seen. It also looks at the lock as an operator would
//! (`snapshot`, `holder`). It prints one timeline of what the workers, the store and the
//! operator saw, then checks the outcome, not the timings (`make demo-redis` exits non-zero
//! if it differs): the stale write is refused, tokens increase in line order, every accepted
//! write carried the highest token yet, and nothing is left held. What must happen in order
//! is put in order by the code, not by sleeps: worker-c asks once the snapshot shows
//! worker-b in line, and worker-a's late write waits for worker-b's.

mod worker;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alkstore_mem::Fence;
use alkstore_redis::{RedisConfig, RedisLocks};

const NAME: &str = "invoice/1001";
/// The invoice's lease: short, so that a stall loses it.
const LEASE: Duration = Duration::from_millis(1000);
/// How long worker-a stalls (at least; it also outlasts worker-b's write).
const STALL: Duration = Duration::from_millis(1600);
/// worker-c's payment: four steps, 2 s in all, twice its lease; renewed every 250 ms.
const JOB_STEPS: u32 = 4;
const JOB_STEP: Duration = Duration::from_millis(500);
const RENEW_EVERY: Duration = Duration::from_millis(250);
/// The workers' bound on each call to Redis, well below what a renewal has left.
const IO_TIMEOUT: Duration = Duration::from_millis(250);

fn url() -> String {
    std::env::var("ALKSTORE_REDIS_URL")
        .expect("ALKSTORE_REDIS_URL is not set: run `make demo-redis`, which starts a server")
}

/// Milliseconds since the Unix epoch.
fn epoch_ms() -> u64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    u64::try_from(now.as_millis()).unwrap()
}

/// Milliseconds since the demo's start (`start_ms` since the epoch): one machine, one clock.
fn since(start_ms: u64) -> u64 {
    epoch_ms().saturating_sub(start_ms)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let (Some("worker"), Some(who), Some(ns), Some(start)) = (
        args.get(1).map(String::as_str),
        args.get(2),
        args.get(3),
        args.get(4),
    ) {
        let start_ms = start.parse().expect("the start in ms");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        return runtime.block_on(async {
            worker::Worker::connect(who, &url(), ns, start_ms)
                .await
                .run()
                .await;
        });
    }
    coordinate();
}

/// A line from a worker (`None`: it closed its output, it is done).
struct Message {
    who: &'static str,
    line: Option<String>,
}

/// One write the store was asked for, and its answer.
#[derive(Debug)]
struct Attempt {
    who: &'static str,
    token: u64,
    value: String,
    accepted: bool,
}

/// The invoice store, with its fence, and the demo's bookkeeping.
struct Coordinator {
    start_ms: u64,
    messages: Receiver<Message>,
    sender: Sender<Message>,
    workers: HashMap<&'static str, (Child, ChildStdin)>,
    fence: Fence,
    attempts: Vec<Attempt>,
    tokens: HashMap<&'static str, u64>,
    /// Tokens in the order they were granted: the timeline calls them T1, T2, ...
    labels: Vec<u64>,
    running: usize,
}

impl Coordinator {
    /// Prints one line of the timeline, with tokens as T1, T2, ...
    fn say(&self, ms: u64, who: &str, what: &str) {
        println!("[{ms:>5} ms] {who:<9} {}", self.labelled(what));
    }

    /// `text` with every token granted so far as its label.
    fn labelled(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for (i, token) in self.labels.iter().enumerate() {
            text = text.replace(&token.to_string(), &format!("T{}", i + 1));
        }
        text
    }

    /// Starts worker `who` (a, b or c) in namespace `ns`; a thread forwards its lines.
    fn spawn(&mut self, who: &'static str, ns: &str) {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["worker", who, ns, &self.start_ms.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let sender = self.sender.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let line = Some(line.unwrap());
                sender.send(Message { who, line }).unwrap();
            }
            sender.send(Message { who, line: None }).unwrap();
        });
        self.workers.insert(who, (child, stdin));
        self.running += 1;
    }

    fn tell(&mut self, who: &str, line: &str) {
        let (_, stdin) = self.workers.get_mut(who).unwrap();
        writeln!(stdin, "{line}").unwrap();
    }

    /// Handles one message: prints it, and answers a write. Returns its kind.
    fn handle(&mut self, message: Message) -> String {
        let Some(line) = message.line else {
            self.running -= 1;
            return "closed".into();
        };
        let who = message.who;
        let mut parts = line.splitn(4, '\t');
        let (Some(ms), Some(kind), Some(token), Some(text)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            panic!("worker-{who} said {line:?}");
        };
        let (ms, token): (u64, u64) = (ms.parse().unwrap(), token.parse().unwrap());
        let worker = format!("worker-{who}");
        match kind {
            "write" => self.write(who, token, text),
            "holds" => {
                // A new token: its label, and this once its value.
                self.tokens.insert(who, token);
                self.labels.push(token);
                let label = format!("T{}", self.labels.len());
                let text = self
                    .labelled(text)
                    .replacen(&label, &format!("{label} = {token}"), 1);
                println!("[{ms:>5} ms] {worker:<9} {text}");
            }
            _ => self.say(ms, &worker, text),
        }
        kind.to_owned()
    }

    /// The store's side of a write: the fence decides.
    fn write(&mut self, who: &'static str, token: u64, value: &str) {
        let answer = self.fence.check(token);
        let now = since(self.start_ms);
        match &answer {
            Ok(()) => self.say(
                now,
                "store",
                &format!("accepted worker-{who}'s write {value:?} (token {token})"),
            ),
            Err(stale) => self.say(
                now,
                "store",
                &format!("REFUSED worker-{who}'s write {value:?}: {stale}"),
            ),
        }
        self.attempts.push(Attempt {
            who,
            token,
            value: value.to_owned(),
            accepted: answer.is_ok(),
        });
        match answer {
            Ok(()) => self.tell(who, "ok"),
            Err(stale) => self.tell(who, &format!("refused {stale}")),
        }
        // worker-b's takeover has written: worker-a may wake up.
        if who == "b" && self.attempts.last().is_some_and(|a| a.accepted) {
            self.tell("a", "go");
        }
    }

    /// Handles messages until worker `who` says `kind`.
    fn until(&mut self, who: &str, kind: &str) {
        loop {
            let message = self.messages.recv().unwrap();
            let from = message.who;
            if self.handle(message) == kind && from == who {
                return;
            }
        }
    }

    /// Handles messages until `done` holds, checking it every 10 ms.
    fn until_true(&mut self, mut done: impl FnMut() -> bool) {
        while !done() {
            self.for_(Duration::from_millis(10));
        }
    }

    /// Handles messages for `period`.
    fn for_(&mut self, period: Duration) {
        let end = Instant::now() + period;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.messages.recv_timeout(left) {
                Ok(message) => {
                    self.handle(message);
                }
                Err(_) => return,
            }
        }
    }

    /// Handles messages until every worker is done.
    fn until_done(&mut self) {
        while self.running > 0 {
            let message = self.messages.recv().unwrap();
            self.handle(message);
        }
    }
}

fn coordinate() {
    let url = url();
    let ns = format!("demo{}", std::process::id());
    let (sender, messages) = channel();
    let mut demo = Coordinator {
        start_ms: epoch_ms(),
        messages,
        sender,
        workers: HashMap::new(),
        fence: Fence::default(),
        attempts: Vec::new(),
        tokens: HashMap::new(),
        labels: Vec::new(),
        running: 0,
    };
    println!(
        "alkstore-redis demo: three processes share one lock on Redis, with {} ms leases,\n\
         fencing tokens, FIFO hand-off and keep-alive. The invoice store (this process) keeps\n\
         a Fence: it refuses a write whose token is older than one it has seen. Tokens come\n\
         from the server's clock in µs (T1, T2, T3 below): compare them, never count them.\n",
        LEASE.as_millis()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let operator = runtime
        .block_on(RedisLocks::connect_with(
            &url,
            RedisConfig::new().with_namespace(&ns),
        ))
        .unwrap();
    // Who waits in line, in order, as the operator sees it.
    let in_line = || -> Vec<String> {
        let snapshot = runtime.block_on(operator.snapshot()).unwrap();
        snapshot.waiting.into_iter().map(|w| w.owner).collect()
    };
    demo.spawn("a", &ns);
    demo.until("a", "holds");
    demo.spawn("b", &ns);
    // worker-c asks once worker-b is in line (the operator's snapshot shows it).
    demo.until_true(|| in_line() == ["worker-b"]);
    demo.spawn("c", &ns);
    demo.until_true(|| in_line().len() == 2);
    let snapshot = runtime.block_on(operator.snapshot()).unwrap();
    let held: Vec<String> = snapshot
        .held
        .iter()
        .map(|l| format!("{} holds {} (token {})", l.owner(), l.name(), l.token()))
        .collect();
    let waiting: Vec<&str> = snapshot.waiting.iter().map(|w| w.owner.as_str()).collect();
    let what = format!(
        "snapshot(): {}; waiting in line: {}",
        held.join(", "),
        waiting.join(", ")
    );
    demo.say(since(demo.start_ms), "operator", &what);
    demo.until("c", "holds");
    // Once worker-c has held the lease longer than one lease: keep_alive renewed it.
    demo.for_(LEASE + Duration::from_millis(300));
    if let Some(held) = runtime.block_on(operator.holder(NAME)).unwrap() {
        let until = held.deadline().as_millis().saturating_sub(demo.start_ms);
        let what = format!(
            "holder({NAME:?}): {}, token {}, lease until {until} ms (renewed by keep_alive)",
            held.owner(),
            held.token()
        );
        demo.say(since(demo.start_ms), "operator", &what);
    }
    demo.until_done();
    for (who, (child, _)) in &mut demo.workers {
        assert!(child.wait().unwrap().success(), "worker-{who} failed");
    }
    check(&demo);
    let after = runtime.block_on(operator.snapshot()).unwrap();
    assert!(
        after.held.is_empty() && after.waiting.is_empty(),
        "every lease ended, nobody waits: {after:?}"
    );
    println!("demo-redis: OK");
}

/// The outcome, whatever the timings were.
fn check(demo: &Coordinator) {
    let (a, b, c) = (demo.tokens["a"], demo.tokens["b"], demo.tokens["c"]);
    assert!(
        a < b && b < c,
        "tokens increase in line order: {a} < {b} < {c}"
    );
    let refused: Vec<&Attempt> = demo.attempts.iter().filter(|x| !x.accepted).collect();
    assert!(
        refused.len() == 1 && refused[0].who == "a" && refused[0].token == a,
        "only worker-a's late write is refused: {:?}",
        demo.attempts
    );
    // The fence's rule over every attempt, in the order the store saw them.
    let mut highest = 0;
    for attempt in &demo.attempts {
        assert_eq!(attempt.accepted, attempt.token >= highest, "{attempt:?}");
        highest = highest.max(attempt.token);
    }
    let last = demo.attempts.iter().rfind(|x| x.accepted).unwrap();
    println!(
        "\nfinal  {NAME} = {:?} (written with token {})",
        last.value,
        demo.labelled(&last.token.to_string())
    );
    println!(
        "checks: T1 < T2 < T3 in line order; only worker-a's late write was refused;\n        \
         every accepted write carried the highest token yet; no lease is left"
    );
    if last.who != "c" {
        println!("(worker-c's lease was lost on this run: the machine stalled; it did not write)");
    }
}
