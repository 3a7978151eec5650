//! A wallet's keys: list, register a public key or generate a pair (the private key is returned once), remove.

use super::{
    Error, Services,
    dto::{AddKey, KeyAdded},
};
use crate::httpsig::jwk::{self, Jwks};

pub async fn list_keys(s: &Services, name: &str) -> Result<Jwks, Error> {
    Ok(s.wallets.keys(name).await?)
}

pub async fn add_key(s: &Services, name: &str, body: AddKey) -> Result<KeyAdded, Error> {
    match body {
        AddKey {
            jwk: Some(j),
            generate: false,
        } => {
            let j = jwk::from_input_value(&j).map_err(crate::wallet::WalletError::from)?;
            Ok(KeyAdded {
                jwk: s.wallets.add_key(name, j).await?,
                private_key_pem: None,
            })
        }
        AddKey {
            jwk: None,
            generate: true,
        } => {
            let (public, secret) = s.wallets.generate_key(name).await?;
            Ok(KeyAdded {
                jwk: public,
                private_key_pem: Some(jwk::to_pkcs8_pem(&secret)),
            })
        }
        _ => Err(Error::invalid(
            "invalid_request",
            "give exactly one of \"jwk\" or \"generate\": true",
        )),
    }
}

pub async fn remove_key(s: &Services, name: &str, kid: &str) -> Result<(), Error> {
    Ok(s.wallets.remove_key(name, kid).await?)
}
