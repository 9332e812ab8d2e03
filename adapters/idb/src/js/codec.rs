//! Rows as JavaScript objects (readable in the browser's DevTools) and back. Decoding checks
//! every field: a row this engine did not write (or an older schema's) is an error that
//! names the field, never a panic and never a guess.

use std::cell::RefCell;
use std::collections::HashMap;

use js_sys::{Array, JsString, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::tx::row::{Lease, MAX_EXACT, MAX_QUEUE, Meta, Row, Ticket};

thread_local! {
    /// The field names as JavaScript strings, made once per context (every row uses them).
    static KEYS: RefCell<HashMap<&'static str, JsValue>> = RefCell::new(HashMap::new());
}

/// `key` as a JavaScript string, made once.
fn key(key: &'static str) -> JsValue {
    KEYS.with(|keys| {
        keys.borrow_mut()
            .entry(key)
            .or_insert_with(|| JsValue::from_str(key))
            .clone()
    })
}

fn get(obj: &JsValue, k: &'static str) -> JsValue {
    Reflect::get(obj, &key(k)).unwrap_or(JsValue::UNDEFINED)
}

fn set(obj: &Object, k: &'static str, value: &JsValue) {
    // Only fails on a frozen or exotic object; ours are plain new objects.
    let _ = Reflect::set(obj, &key(k), value);
}

fn num(n: u64) -> JsValue {
    JsValue::from_f64(n as f64)
}

/// A string field. One with a lone surrogate (which no Rust string holds: reading it would
/// turn it into U+FFFD, and writing it back would put the row under another name or owner)
/// is refused; the costly check runs only when a U+FFFD shows up.
fn string(obj: &JsValue, key: &'static str) -> Result<String, String> {
    let value = get(obj, key);
    let text = value
        .as_string()
        .ok_or_else(|| format!("field {key:?} is not a string"))?;
    if text.contains('\u{FFFD}') && !value.unchecked_ref::<JsString>().is_valid_utf16() {
        return Err(format!(
            "field {key:?} is not valid Unicode (it holds a lone surrogate)"
        ));
    }
    Ok(text)
}

fn number(obj: &JsValue, key: &'static str) -> Result<u64, String> {
    let n = get(obj, key)
        .as_f64()
        .ok_or_else(|| format!("field {key:?} is not a number"))?;
    if n.fract() != 0.0 || !(0.0..=MAX_EXACT as f64).contains(&n) {
        return Err(format!("field {key:?} is {n}, not a whole number of µs"));
    }
    Ok(n as u64)
}

/// An optional string field: missing (a row written before it existed) reads as empty.
fn opt_string(obj: &JsValue, key: &'static str) -> Result<String, String> {
    if get(obj, key).is_undefined() {
        return Ok(String::new());
    }
    string(obj, key)
}

/// An optional number field: missing (a row written before it existed) reads as 0.
fn opt_number(obj: &JsValue, key: &'static str) -> Result<u64, String> {
    if get(obj, key).is_undefined() {
        return Ok(0);
    }
    number(obj, key)
}

fn boolean(obj: &JsValue, key: &'static str) -> Result<bool, String> {
    get(obj, key)
        .as_bool()
        .ok_or_else(|| format!("field {key:?} is not a boolean"))
}

/// A `locks` row (or `undefined`: the name has none) as a [`Row`].
pub(crate) fn decode_row(value: &JsValue) -> Result<Row, String> {
    if value.is_undefined() {
        return Ok(Row::default());
    }
    if !value.is_object() {
        return Err("the row is not an object".into());
    }
    let lease = get(value, "lease");
    let lease = if lease.is_undefined() || lease.is_null() {
        None
    } else {
        Some(Lease {
            owner: string(&lease, "owner")?,
            token: number(&lease, "token")?,
            deadline: number(&lease, "deadline")?,
            ttl: number(&lease, "ttl")?,
            grantee: string(&lease, "grantee")?,
            claimed: boolean(&lease, "claimed")?,
            pickup_by: number(&lease, "pickupBy")?,
            ctx: opt_string(&lease, "ctx")?,
            seq: opt_number(&lease, "seq")?,
        })
    };
    let queue = get(value, "queue");
    let queue: Array = queue
        .dyn_into()
        .map_err(|_| "field \"queue\" is not an array".to_string())?;
    if queue.length() as usize > MAX_QUEUE {
        return Err(format!(
            "its queue holds {} tickets; alkstore-idb keeps at most {MAX_QUEUE}",
            queue.length()
        ));
    }
    let mut tickets = Vec::with_capacity(queue.length() as usize);
    for t in queue.iter() {
        tickets.push(Ticket {
            id: string(&t, "id")?,
            owner: string(&t, "owner")?,
            ttl: number(&t, "ttl")?,
            wait_until: number(&t, "waitUntil")?,
            heartbeat_until: number(&t, "heartbeatUntil")?,
            ctx: opt_string(&t, "ctx")?,
            seq: opt_number(&t, "seq")?,
        });
    }
    Ok(Row {
        lease,
        queue: tickets,
    })
}

/// `row` as the `locks` row of `name`.
pub(crate) fn encode_row(name: &str, row: &Row) -> JsValue {
    let obj = Object::new();
    set(&obj, "name", &JsValue::from_str(name));
    if let Some(l) = &row.lease {
        let lease = Object::new();
        set(&lease, "owner", &JsValue::from_str(&l.owner));
        set(&lease, "token", &num(l.token));
        set(&lease, "deadline", &num(l.deadline));
        set(&lease, "ttl", &num(l.ttl));
        set(&lease, "grantee", &JsValue::from_str(&l.grantee));
        set(&lease, "claimed", &JsValue::from_bool(l.claimed));
        set(&lease, "pickupBy", &num(l.pickup_by));
        if !l.ctx.is_empty() {
            set(&lease, "ctx", &JsValue::from_str(&l.ctx));
        }
        if l.seq != 0 {
            set(&lease, "seq", &num(l.seq));
        }
        set(&obj, "lease", &lease);
    }
    let queue = Array::new();
    for t in &row.queue {
        let ticket = Object::new();
        set(&ticket, "id", &JsValue::from_str(&t.id));
        set(&ticket, "owner", &JsValue::from_str(&t.owner));
        set(&ticket, "ttl", &num(t.ttl));
        set(&ticket, "waitUntil", &num(t.wait_until));
        set(&ticket, "heartbeatUntil", &num(t.heartbeat_until));
        if !t.ctx.is_empty() {
            set(&ticket, "ctx", &JsValue::from_str(&t.ctx));
        }
        if t.seq != 0 {
            set(&ticket, "seq", &num(t.seq));
        }
        queue.push(&ticket);
    }
    set(&obj, "queue", &queue);
    obj.into()
}

/// The name a `locks` row is kept under.
pub(crate) fn row_name(value: &JsValue) -> Result<String, String> {
    string(value, "name")
}

/// The `meta` store's `clock` row (or `undefined`: a new database) as [`Meta`].
pub(crate) fn decode_meta(value: &JsValue) -> Result<Meta, String> {
    if value.is_undefined() {
        return Ok(Meta::default());
    }
    if !value.is_object() {
        return Err("the clock row is not an object".into());
    }
    let offset = get(value, "offset");
    Ok(Meta {
        token: number(value, "token")?,
        floor: number(value, "floor")?,
        offset: if offset.is_undefined() {
            0
        } else {
            number(value, "offset")?
        },
    })
}

/// [`Meta`] as the `meta` store's `clock` row.
pub(crate) fn encode_meta(meta: &Meta) -> JsValue {
    let obj = Object::new();
    set(&obj, "key", &JsValue::from_str(CLOCK));
    set(&obj, "token", &num(meta.token));
    set(&obj, "floor", &num(meta.floor));
    if meta.offset != 0 {
        set(&obj, "offset", &num(meta.offset));
    }
    obj.into()
}

/// The key of the `meta` store's one row.
pub(crate) const CLOCK: &str = "clock";
