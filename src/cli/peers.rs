//! Operator commands on ILP peers (`peers list|show|add|update|remove`) and how a peer reads for people.
//! Prints only through [`super::print`].

use color_eyre::eyre::Result;

use super::{
    Backend, PeersCmd, dispatch,
    print::{emit, list},
};
use crate::{
    ase::peers::PeerPatch,
    control::{
        self,
        dto::{NewPeer, PeerView},
    },
    money::format_minor,
};

/// `peers list|show|add|update|remove`.
pub(super) async fn peers(b: &Backend, cmd: PeersCmd, json: bool) -> Result<()> {
    match cmd {
        PeersCmd::List => {
            let ps = dispatch!(b, c => c.list_peers(), l => control::list_peers(&l.state))?;
            list(
                json,
                &ps,
                &["NAME", "ASSET", "SOURCE", "RECEIVES", "SENDS TO", "ROUTES", "BALANCE"],
                |p| {
                    vec![
                        p.name.clone(),
                        format!("{}/{}", p.asset_code, p.asset_scale),
                        p.source.clone(),
                        if p.receives {
                            format!(
                                "yes ({} token{})",
                                p.incoming_tokens,
                                if p.incoming_tokens == 1 { "" } else { "s" }
                            )
                        } else {
                            "no".into()
                        },
                        p.outgoing_endpoint.clone().unwrap_or_default(),
                        p.routes.join(","),
                        format_minor(p.peer_account_balance.into(), p.asset_scale),
                    ]
                },
            )
        }
        PeersCmd::Show { name } => {
            let p = dispatch!(b, c => c.show_peer(&name), l => control::show_peer(&l.state, &name))?;
            emit(json, &p, || peer_text(&p))
        }
        PeersCmd::Add {
            name,
            asset,
            scale,
            fields,
        } => {
            let body = NewPeer {
                name,
                ilp_address: fields.ilp_address,
                asset_code: asset,
                asset_scale: scale,
                incoming_tokens: fields.incoming_tokens,
                generate_incoming_token: fields.generate_incoming_token,
                outgoing_endpoint: fields.outgoing_endpoint,
                outgoing_token: fields.outgoing_token,
                routes: fields.route,
                max_packet_amount: fields.max_packet_amount,
            };
            let p = dispatch!(b, c => c.create_peer(&body), l => control::create_peer(&l.state, body.clone()))?;
            emit(json, &p, || peer_text(&p))
        }
        PeersCmd::Update {
            name,
            fields,
            no_ilp_address,
            no_outgoing,
            no_max_packet_amount,
        } => {
            let patch = PeerPatch {
                ilp_address: if no_ilp_address {
                    Some(None)
                } else {
                    fields.ilp_address.map(Some)
                },
                incoming_tokens: (!fields.incoming_tokens.is_empty()).then_some(fields.incoming_tokens),
                generate_incoming_token: fields.generate_incoming_token,
                outgoing_endpoint: if no_outgoing {
                    Some(None)
                } else {
                    fields.outgoing_endpoint.map(Some)
                },
                outgoing_token: if no_outgoing {
                    Some(None)
                } else {
                    fields.outgoing_token.map(Some)
                },
                routes: if no_outgoing {
                    Some(Vec::new())
                } else {
                    (!fields.route.is_empty()).then_some(fields.route)
                },
                max_packet_amount: if no_max_packet_amount {
                    Some(None)
                } else {
                    fields.max_packet_amount.map(Some)
                },
            };
            let p = dispatch!(b, c => c.update_peer(&name, &patch), l => control::update_peer(&l.state, &name, patch.clone()))?;
            emit(json, &p, || peer_text(&p))
        }
        PeersCmd::Remove { name } => {
            dispatch!(b, c => c.remove_peer(&name), l => control::remove_peer(&l.state, &name))?;
            emit(json, &serde_json::json!({ "removed": name }), || {
                format!("removed peer {name}\n")
            })
        }
    }
}

/// One peer, for people; a generated token is printed once, with what to do with it.
fn peer_text(p: &PeerView) -> String {
    let mut out = format!(
        "{} ({})\n  asset:           {}/{}\n  ILP address:     {}\n  incoming tokens: {}\n  sends to:        {}\n  routes:          {}\n  max packet:      {}\n  balance:         {}\n",
        p.name,
        p.source,
        p.asset_code,
        p.asset_scale,
        p.ilp_address.as_deref().unwrap_or("-"),
        p.incoming_tokens,
        p.outgoing_endpoint.as_deref().unwrap_or("-"),
        if p.routes.is_empty() {
            "-".into()
        } else {
            p.routes.join(", ")
        },
        p.max_packet_amount.map_or_else(|| "no limit".into(), |m| m.to_string()),
        format_minor(p.peer_account_balance.into(), p.asset_scale),
    );
    for t in &p.generated_incoming_tokens {
        out.push_str(&format!(
            "  generated incoming token (shown once; the peer sends it as its bearer token to our /ilp):\n    {t}\n"
        ));
    }
    out
}
