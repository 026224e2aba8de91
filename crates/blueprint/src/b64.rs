//! Strict base64url (spec §3): unpadded, exact alphabet, canonical trailing
//! bits. Padded input denies `base64url_padded`; anything else that is not
//! the exact unpadded encoding of some bytes denies `base64url_invalid`.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine};

use crate::error::{fail, Code, Result};

const STRICT: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(false),
);

/// Decodes strict unpadded base64url.
pub fn decode(s: &str) -> Result<Vec<u8>> {
    if s.contains('=') {
        return fail(Code::Base64urlPadded, "base64url", "padding '=' is not allowed");
    }
    if let Some(bad) = s.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_')) {
        return fail(Code::Base64urlInvalid, "base64url", format!("{bad:?} is outside the base64url alphabet"));
    }
    STRICT.decode(s).map_err(|e| crate::error::Error::new(Code::Base64urlInvalid, "base64url", e.to_string()))
}

/// Encodes unpadded base64url.
pub fn encode(bytes: &[u8]) -> String {
    STRICT.encode(bytes)
}
