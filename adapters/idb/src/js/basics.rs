//! The small pieces every JavaScript-facing module uses: the object store names, the event
//! handler type, `Date.now()` in µs, and a JavaScript error as text.

use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{DomException, Event};

/// An event handler kept alive by its owner.
pub(crate) type Handler = Closure<dyn FnMut(Event)>;

pub(crate) const LOCKS: &str = "locks";
pub(crate) const META: &str = "meta";

/// `Date.now()` in µs.
pub(crate) fn date_now_us() -> u64 {
    let ms = js_sys::Date::now();
    if ms > 0.0 { (ms * 1000.0) as u64 } else { 0 }
}

/// A JavaScript error as text: `Name: message` for a `DOMException`.
pub(crate) fn describe(value: &JsValue) -> String {
    if let Some(e) = value.dyn_ref::<DomException>() {
        return format!("{}: {}", e.name(), e.message());
    }
    if let Some(e) = value.dyn_ref::<js_sys::Error>() {
        return format!("{}: {}", String::from(e.name()), String::from(e.message()));
    }
    value.as_string().unwrap_or_else(|| format!("{value:?}"))
}
