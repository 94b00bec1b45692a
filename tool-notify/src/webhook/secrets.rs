//! The `whsec_` secrets a webhook is signed and verified with.

use standardwebhooks::Webhook;

use crate::NotifyError;

/// The prefix of a Standard Webhooks secret: what tells one from a password.
const PREFIX: &str = "whsec_";

/// `secrets` as the library's signers, in the order given; refused when
/// there is none or one is not `whsec_` and non-empty base64.
pub(super) fn parse<S: AsRef<str>>(
    secrets: impl IntoIterator<Item = S>,
) -> Result<Vec<Webhook>, NotifyError> {
    let mut signers = Vec::new();
    for (index, secret) in secrets.into_iter().enumerate() {
        let refused = |reason: &str| NotifyError::Secret {
            position: index + 1,
            reason: reason.to_owned(),
        };
        // The library takes a key without its prefix too; requiring it
        // refuses a password given by mistake, which may decode as base64.
        let Some(key) = secret.as_ref().strip_prefix(PREFIX) else {
            return Err(refused("does not start with whsec_"));
        };
        if key.is_empty() {
            return Err(refused("has no key after whsec_"));
        }
        // The decoder's message names the offending byte: a part of the
        // secret, so it is left out.
        signers.push(Webhook::new(key).map_err(|_| refused("is not base64 after whsec_"))?);
    }
    if signers.is_empty() {
        return Err(NotifyError::NoSecret);
    }
    Ok(signers)
}
