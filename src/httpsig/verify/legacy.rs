//! The legacy form of the signature headers, read only when the strict RFC 8941 parse of them fails: what the
//! official Open Payments Rust SDK writes and the reference ASE (`validateSignature` of
//! `@interledger/http-signature-utils`) reads.
//!
//! ```text
//! Signature-Input: sig1=(@method @target-uri content-type content-digest content-length);created=1700000000;keyid="k1"
//! Signature: MdTE…DA==
//! ```
//!
//! Accepted here, and nothing more:
//! - `Signature-Input` is one member `sig1=(…)` whose components are unquoted names separated by single spaces,
//!   followed by RFC 8941 parameters — the same parameters, read by the same code, as the strict form
//!   (`keyid` a string, `created` an integer, `alg` only `ed25519`); no second member, no second header line;
//! - `Signature` is bare base64 (or `sig1=` and bare base64) of the one label's 64 bytes, or the strict
//!   `sig1=:…:`;
//! - the `@signature-params` line of the signature base is the text after `sig1=` exactly as received.
//!
//! It only rewrites the legacy text into the strict form and hands that to the strict parser, so what is
//! required of the components, the parameters and the signature stays one rule; the verifier's policy
//! (coverage, digest, `created`, key) runs on the result unchanged. It must not accept a shape the reference
//! verifier refuses, nor read a header the strict parse could read.

use sfv::{Dictionary, Item, Parser};

use super::{Error, Form, SignatureParams, parse_fields};

/// The only label the legacy form may carry (the reference verifier reads nothing else).
const LABEL: &str = "sig1";

/// Reads `input` and `sigs` (each header's lines joined) in the legacy form. `None` when they are not in
/// that form at all (the strict parser's error then stands); `Some(Err(_))` when they are, but are refused.
pub(super) fn parse(input: &str, sigs: &str) -> Option<Result<SignatureParams, Error>> {
    let input_strict = Parser::new(input).parse::<Dictionary>().is_ok();
    let (strict_input, legacy_raw) = if input_strict {
        (input.to_owned(), None)
    } else {
        let raw = input.trim_matches([' ', '\t']).strip_prefix(LABEL)?.strip_prefix('=')?;
        (format!("{LABEL}={}", quote_components(raw)?), Some(raw))
    };
    let sigs_strict = Parser::new(sigs).parse::<Dictionary>().is_ok();
    let strict_sigs = if sigs_strict {
        sigs.to_owned()
    } else {
        let trimmed = sigs.trim_matches([' ', '\t']);
        let bare = trimmed
            .strip_prefix(LABEL)
            .and_then(|rest| rest.strip_prefix('='))
            .unwrap_or(trimmed);
        if !is_base64(bare) {
            return None;
        }
        format!("{LABEL}=:{bare}:")
    };
    if input_strict && sigs_strict {
        // Both headers are structured fields: the strict parser refused them for another reason.
        return None;
    }
    Some(finish(
        &strict_input,
        &strict_sigs,
        legacy_raw,
        !input_strict,
        !sigs_strict,
    ))
}

/// Parses the rewritten headers strictly and keeps what the client signed as `@signature-params`.
fn finish(
    input: &str,
    sigs: &str,
    legacy_raw: Option<&str>,
    bare_components: bool,
    bare_signature: bool,
) -> Result<SignatureParams, Error> {
    let (mut params, labels) = parse_fields(input, sigs)?;
    if labels != 1 || params.label != LABEL {
        return Err(Error::Malformed(format!(
            "legacy signature form: exactly one label `{LABEL}` is allowed"
        )));
    }
    if let Some(raw) = legacy_raw {
        raw.clone_into(&mut params.raw_params);
    }
    params.form = Form::Legacy {
        bare_components,
        bare_signature,
    };
    Ok(params)
}

/// `(a b c);params` → `("a" "b" "c");params`, when every component is an unquoted name and what follows the
/// list is RFC 8941 parameters and nothing else. `None` for any other shape.
fn quote_components(raw: &str) -> Option<String> {
    let inner_and_rest = raw.strip_prefix('(')?;
    let close = inner_and_rest.find(')')?;
    let (inner, rest) = (&inner_and_rest[..close], &inner_and_rest[close + 1..]);
    let mut out = String::from("(");
    if !inner.is_empty() {
        for (i, name) in inner.split(' ').enumerate() {
            if !is_bare_name(name) {
                return None;
            }
            if i > 0 {
                out.push(' ');
            }
            out.push('"');
            out.push_str(name);
            out.push('"');
        }
    }
    out.push(')');
    // Parameters only: as the parameters of a bare item they must parse, and an item has no second member.
    if !rest.is_empty() && Parser::new(&format!("0{rest}")).parse::<Item>().is_err() {
        return None;
    }
    out.push_str(rest);
    Some(out)
}

/// A component name as a client writes it unquoted: an optional `@`, then letters, digits, `-`, `_`, `.`.
/// Upper case passes here so that the strict parser refuses it in its own words.
fn is_bare_name(name: &str) -> bool {
    let body = name.strip_prefix('@').unwrap_or(name);
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Standard base64 with padding (what the reference verifier decodes); the strict parser decodes it and
/// checks its length.
fn is_base64(text: &str) -> bool {
    let body = text.trim_end_matches('=');
    !body.is_empty()
        && text.len().is_multiple_of(4)
        && text.len() - body.len() <= 2
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'))
}

#[cfg(test)]
mod tests;
