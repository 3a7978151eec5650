//! The `metadata` a client attaches to a payment: a JSON object, kept as the compact text it is written as once at
//! create, and echoed as that text on every read — never parsed back into a tree to be written out again.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, value::RawValue};

/// A payment's metadata as stored and answered.
#[derive(Debug, Clone)]
pub struct Metadata(Box<RawValue>);

impl Metadata {
    /// The compact text of an object a request carried (`None` only if serde_json could not write an object
    /// it parsed, which it always can).
    pub fn of_object(m: Map<String, Value>) -> Option<Self> {
        serde_json::value::to_raw_value(&Value::Object(m)).ok().map(Self)
    }

    /// Metadata as the store keeps it (`None` for text that is not JSON: the row was written by something else).
    pub fn from_stored(text: &str) -> Option<Self> {
        RawValue::from_string(text.to_owned()).ok().map(Self)
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for Metadata {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl std::fmt::Display for Metadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Metadata {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// Read as a value and written back compact: a raw value cannot be read from the buffered content of a
/// flattened struct (`IncomingView` flattens the payment), and only clients read metadata back.
impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        serde_json::value::to_raw_value(&v)
            .map(Self)
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_echoed_as_written() {
        let m: Map<String, Value> = serde_json::from_str(r#"{ "b": 1, "a": [true, "x"] }"#).unwrap();
        let md = Metadata::of_object(m).unwrap();
        let text = md.as_str().to_owned();
        assert!(!text.contains(' '), "compact: {text}");
        // echoed byte for byte inside a document, and read back equal
        let doc = serde_json::to_string(&serde_json::json!({ "id": 1 })).unwrap();
        assert_eq!(doc, r#"{"id":1}"#);
        let wrapped = serde_json::to_string(&[&md]).unwrap();
        assert_eq!(wrapped, format!("[{text}]"));
        let back: Vec<Metadata> = serde_json::from_str(&wrapped).unwrap();
        assert_eq!(back[0], md);
        // also inside a flattened struct, as the operator views carry payments
        #[derive(Deserialize)]
        struct Inner {
            metadata: Metadata,
        }
        #[derive(Deserialize)]
        struct Outer {
            #[serde(flatten)]
            inner: Inner,
        }
        let o: Outer = serde_json::from_str(&format!(r#"{{"metadata": {text}, "x": 1}}"#)).unwrap();
        assert_eq!(o.inner.metadata, md);
        assert_eq!(Metadata::from_stored(&text), Some(md));
        assert_eq!(Metadata::from_stored("not json"), None);
    }
}
