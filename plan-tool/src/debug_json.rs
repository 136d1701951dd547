//! Turns the `Debug` text of flatc-generated tables (`Name { field: value, … }`) into JSON, so
//! that every node attribute table of the Graph schema is shown field by field without a
//! hand-written describer per operation.
//!
//! Grammar read (what `#[derive(Debug)]`-style output and flatc's generated `Debug` impls
//! print): `None` → null; `Some(v)` → v; `[a, b]` → array; `"text"` → string; numbers, `inf`,
//! `NaN` → number (or string when not finite); `true`/`false`; `Name { f: v, … }` → object of
//! the fields; `Name(v)` → `{ "Name": v }`; a bare identifier (an enum variant) → string.
//! It never fails: text it cannot read is returned as one JSON string.

use serde_json::{Map, Value};

/// The JSON value of the `Debug` text `text`, or `text` itself as a string when it does not
/// follow the grammar of the module docs.
pub fn debug_to_json(text: &str) -> Value {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    match p.value() {
        Some(v) if p.rest_is_blank() => v,
        _ => Value::String(text.to_string()),
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn blank(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn rest_is_blank(&mut self) -> bool {
        self.blank();
        self.i == self.s.len()
    }

    fn peek(&mut self) -> Option<u8> {
        self.blank();
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn ident(&mut self) -> Option<String> {
        self.blank();
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
        {
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    fn value(&mut self) -> Option<Value> {
        match self.peek()? {
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Some(Value::Array(items));
                }
                loop {
                    items.push(self.value()?);
                    if self.eat(b']') {
                        return Some(Value::Array(items));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'"' => self.string().map(Value::String),
            c if c == b'-' || c.is_ascii_digit() => self.number(),
            _ => self.named(),
        }
    }

    fn string(&mut self) -> Option<String> {
        self.i += 1; // opening quote
        let mut out = Vec::new();
        while self.i < self.s.len() {
            let c = self.s[self.i];
            self.i += 1;
            match c {
                b'"' => return String::from_utf8(out).ok(),
                b'\\' => {
                    let e = *self.s.get(self.i)?;
                    self.i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'0' => out.push(0),
                        b'u' => {
                            // \u{XXXX}
                            let close = self.s[self.i..].iter().position(|&b| b == b'}')?;
                            let hex =
                                std::str::from_utf8(&self.s[self.i + 1..self.i + close]).ok()?;
                            let ch = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                            self.i += close + 1;
                        }
                        other => out.push(other),
                    }
                }
                _ => out.push(c),
            }
        }
        None
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.i;
        if self.s[self.i] == b'-' {
            self.i += 1;
        }
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric()
                || matches!(self.s[self.i], b'.' | b'+' | b'-'))
        {
            self.i += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).ok()?;
        if let Ok(i) = text.parse::<i64>() {
            return Some(Value::from(i));
        }
        if let Ok(u) = text.parse::<u64>() {
            return Some(Value::from(u));
        }
        let f = text.parse::<f64>().ok()?;
        Some(
            serde_json::Number::from_f64(f)
                .map_or_else(|| Value::String(text.into()), Value::Number),
        )
    }

    fn named(&mut self) -> Option<Value> {
        let name = self.ident()?;
        match name.as_str() {
            "None" => return Some(Value::Null),
            "true" => return Some(Value::Bool(true)),
            "false" => return Some(Value::Bool(false)),
            "inf" | "NaN" => return Some(Value::String(name)),
            _ => {}
        }
        if self.eat(b'(') {
            let inner = self.value()?;
            if !self.eat(b')') {
                return None;
            }
            if name == "Some" {
                return Some(inner);
            }
            let mut m = Map::new();
            m.insert(name, inner);
            return Some(Value::Object(m));
        }
        if self.eat(b'{') {
            let mut m = Map::new();
            if self.eat(b'}') {
                return Some(Value::Object(m));
            }
            loop {
                let field = self.ident()?;
                if !self.eat(b':') {
                    return None;
                }
                let v = self.value()?;
                m.insert(field, v);
                if self.eat(b'}') {
                    return Some(Value::Object(m));
                }
                if !self.eat(b',') {
                    return None;
                }
            }
        }
        Some(Value::String(name))
    }
}

#[cfg(test)]
mod tests {
    use super::debug_to_json;
    use serde_json::json;

    #[test]
    fn generated_table_debug_becomes_fields() {
        let t = r#"ConvolutionFwdAttributes { x_tensor_uid: 1, pre_padding: Some([1, 1]), conv_mode: CROSS_CORRELATION, name: Some("a \"b\""), alpha: -1.5, beta: None, on: true }"#;
        assert_eq!(
            debug_to_json(t),
            json!({"x_tensor_uid": 1, "pre_padding": [1, 1], "conv_mode": "CROSS_CORRELATION",
                   "name": "a \"b\"", "alpha": -1.5, "beta": null, "on": true})
        );
        assert_eq!(debug_to_json("Float32(2.0)"), json!({"Float32": 2.0}));
        assert_eq!(debug_to_json("<UNKNOWN 9>"), json!("<UNKNOWN 9>"));
    }
}
