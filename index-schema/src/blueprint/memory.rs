//! `memory` of an LLM agent: a number, or `{window, summary}`.

use serde::{Deserialize, Serialize};

/// An LLM agent's memory: the latest `window` floor messages (1 to 10000) in full and, with
/// `summary`, a running summary of the messages before them, written by the agent's own model.
///
/// Written as a number (`memory: 20`, the window alone) or a mapping
/// (`memory: {window: 20, summary: true}`); it is written back in the shorter form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// How many of the latest floor messages are sent in full.
    pub window: u32,
    /// Whether older messages are kept as a running summary.
    pub summary: bool,
}

impl Memory {
    /// The latest `window` messages, no summary.
    pub fn window(window: u32) -> Self {
        Self {
            window,
            summary: false,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryMap {
    window: u32,
    #[serde(default)]
    summary: bool,
}

impl Serialize for Memory {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.summary {
            MemoryMap {
                window: self.window,
                summary: true,
            }
            .serialize(s)
        } else {
            s.serialize_u32(self.window)
        }
    }
}

impl<'de> Deserialize<'de> for Memory {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Memory;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number of messages, or a mapping with `window` and `summary`")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Memory, E> {
                u32::try_from(v)
                    .map(Memory::window)
                    .map_err(|_| E::custom("must be between 1 and 10000 messages"))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Memory, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom("must be between 1 and 10000 messages"))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Memory, A::Error> {
                let m = MemoryMap::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(Memory {
                    window: m.window,
                    summary: m.summary,
                })
            }
        }
        d.deserialize_any(V)
    }
}
