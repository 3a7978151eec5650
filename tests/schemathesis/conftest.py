"""Fixtures for the schemathesis run against a live `opdesk serve` (started by scripts/schemathesis.sh).

Environment: OPDESK_URL (the server's public URL, e.g. http://127.0.0.1:4123) and OPDESK_DATA_DIR (its data
dir: demo-client.pem and admin.token are read from there).

Every request goes through `SigningSession`, which signs the request exactly as it will be sent (body bytes
already serialised) the way the Open Payments SDKs do: RFC 9421, Ed25519, label sig1, keyid then created,
covering @method, @target-uri, authorization when present and, with a body, content-digest (sha-512),
content-length and content-type; plus a random `nonce` parameter so that identical requests replayed by
Hypothesis within one second are not refused as replays.
"""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import os
import time
import urllib.parse
from dataclasses import dataclass, field

import pytest
import requests
from cryptography.hazmat.primitives.serialization import load_pem_private_key

BASE = os.environ.get("OPDESK_URL", "http://127.0.0.1:4000").rstrip("/")
DATA_DIR = os.environ.get("OPDESK_DATA_DIR", "")
WALLET = f"{BASE}/alice"
PAYEE = f"{BASE}/bob"
CLIENT = f"{BASE}/demo-client"
AUTH = f"{BASE}/auth"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _load_key():
    with open(os.path.join(DATA_DIR, "demo-client.pem"), "rb") as f:
        return load_pem_private_key(f.read(), password=None)


class SigningSession(requests.Session):
    """A requests session that signs each prepared request as the demo client, unless told not to.

    `skip_signing` (set per case) leaves whatever Signature / Signature-Input the generator produced, so the
    server's parsers also see garbage; `tamper` flips a bit of the body after signing. Spec paths of a server whose base URL has a path (`/auth`, `/alice`)
    are `/`: the session sends `{base}` for them rather than `{base}/`, as the SDKs do.
    """

    def __init__(self) -> None:
        super().__init__()
        self.key = _load_key()
        self.kid = requests.get(f"{CLIENT}/jwks.json", timeout=10).json()["keys"][0]["kid"]
        self.skip_signing = False
        # After signing, change one body byte (same length) so the digest and signature no longer match.
        self.tamper = False
        self.tampered = False

    def send(self, request: requests.PreparedRequest, **kwargs):  # type: ignore[override]
        for base in (AUTH, WALLET):
            if request.url == base + "/" or request.url.startswith(base + "/?"):
                request.url = base + request.url[len(base) + 1 :]
        self.tampered = False
        if not self.skip_signing:
            sign(request, self.key, self.kid)
            if self.tamper and request.body:
                self.tampered = True
                body = request.body.encode() if isinstance(request.body, str) else bytes(request.body)
                request.body = body[:-1] + bytes([body[-1] ^ 0x01])
        kwargs.setdefault("timeout", 30)
        return super().send(request, **kwargs)


def sign(request: requests.PreparedRequest, key, kid: str) -> None:
    body = request.body or b""
    if isinstance(body, str):
        body = body.encode()
    headers = request.headers
    for name in ("Signature", "Signature-Input", "Content-Digest"):
        headers.pop(name, None)
    components = ["@method", "@target-uri"]
    if "Authorization" in headers:
        components.append("authorization")
    if body:
        headers["Content-Digest"] = f"sha-512=:{b64(hashlib.sha512(body).digest())}:"
        headers["Content-Length"] = str(len(body))
        headers.setdefault("Content-Type", "application/json")
        components += ["content-digest", "content-length", "content-type"]
    else:
        headers.pop("Content-Digest", None)
    # A nonce keeps two identical requests in the same second from being refused as replays.
    nonce = base64.urlsafe_b64encode(os.urandom(12)).decode()
    params = "(" + " ".join(f'"{c}"' for c in components) + f');keyid="{kid}";created={int(time.time())};nonce="{nonce}"'
    target = BASE + request.path_url
    lines = []
    for c in components:
        if c == "@method":
            value = (request.method or "GET").upper()
        elif c == "@target-uri":
            value = target
        else:
            value = str(headers[c]).strip(" \t")
        lines.append(f'"{c}": {value}')
    lines.append(f'"@signature-params": {params}')
    signature = key.sign("\n".join(lines).encode())
    headers["Signature-Input"] = f"sig1={params}"
    headers["Signature"] = f"sig1=:{b64(signature)}:"


@dataclass
class Grants:
    """Tokens and resources the fuzzed requests are pointed at (so they get past authorization)."""

    incoming: str = ""
    quote: str = ""
    outgoing: str = ""
    incoming_ids: list[str] = field(default_factory=list)
    quote_ids: list[str] = field(default_factory=list)
    outgoing_ids: list[str] = field(default_factory=list)


class Client:
    """Plain signed calls for the setup (not fuzzed)."""

    def __init__(self) -> None:
        self.session = SigningSession()
        with open(os.path.join(DATA_DIR, "admin.token")) as f:
            self.admin_token = f.read().strip()

    def call(self, method: str, url: str, token: str | None = None, body: dict | None = None) -> requests.Response:
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"GNAP {token}"
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        req = requests.Request(method, url, headers=headers, data=data)
        return self.session.send(self.session.prepare_request(req))

    def admin(self, method: str, path: str, body: dict | None = None) -> requests.Response:
        return requests.request(
            method,
            f"{BASE}/admin{path}",
            headers={"Authorization": f"Bearer {self.admin_token}"},
            json=body,
            timeout=10,
        )

    def grant(self, access: list[dict], interact: bool = False) -> dict:
        body: dict = {"access_token": {"access": access}, "client": CLIENT}
        if interact:
            body["interact"] = {"start": ["redirect"]}
        r = self.call("POST", AUTH, body=body)
        assert r.status_code == 200, r.text
        return r.json()

    def token(self, access: list[dict]) -> str:
        return self.grant(access)["access_token"]["value"]

    def approved_token(self, access: list[dict]) -> str:
        """An interactive grant, approved through the admin API as the operator would, then continued."""
        g = self.grant(access, interact=True)
        pending = self.admin("GET", "/grants?state=pending").json()
        assert pending, "no pending grant to approve"
        for p in pending:
            r = self.admin("POST", f"/grants/{p['id']}/approve", {})
            assert r.status_code < 300, r.text
        cont = g["continue"]
        time.sleep(max(1, cont.get("wait", 1)) + 0.1)
        r = self.call("POST", cont["uri"], token=cont["access_token"]["value"])
        assert r.status_code == 200, r.text
        return r.json()["access_token"]["value"]


def amount(value: str) -> dict:
    return {"value": value, "assetCode": "USD", "assetScale": 2}


@pytest.fixture(scope="session")
def client() -> Client:
    return Client()


@pytest.fixture(scope="session")
def grants(client: Client) -> Grants:
    g = Grants()
    # `list-all` needs the resource owner's consent (`[gnap] list_all_interaction`): an approved grant for the
    # payee's wallet
    g.incoming = client.approved_token(
        [
            {
                "type": "incoming-payment",
                "actions": ["create", "read", "read-all", "list", "list-all", "complete"],
                "identifier": PAYEE,
            }
        ]
    )
    g.quote = client.token([{"type": "quote", "actions": ["create", "read", "read-all"]}])
    g.outgoing = client.approved_token(
        [
            {
                "type": "outgoing-payment",
                "actions": ["create", "read", "read-all", "list", "list-all"],
                "identifier": WALLET,
            }
        ]
    )
    for n in range(3):
        r = client.call("POST", f"{BASE}/incoming-payments", g.incoming, {"walletAddress": PAYEE, "metadata": {"n": n}})
        assert r.status_code == 201, r.text
        g.incoming_ids.append(r.json()["id"])
    for n in range(3):
        r = client.call(
            "POST",
            f"{BASE}/quotes",
            g.quote,
            {"walletAddress": WALLET, "receiver": g.incoming_ids[n], "method": "ilp", "debitAmount": amount("100")},
        )
        assert r.status_code == 201, r.text
        g.quote_ids.append(r.json()["id"])
    r = client.call("POST", f"{BASE}/outgoing-payments", g.outgoing, {"walletAddress": WALLET, "quoteId": g.quote_ids[0]})
    assert r.status_code == 201, r.text
    g.outgoing_ids.append(r.json()["id"])
    return g


def last_segment(url: str) -> str:
    return urllib.parse.urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]


# (operation, status) → responses seen; printed at the end of the run.
STATUSES: collections.Counter[tuple[str, int | str]] = collections.Counter()


def pytest_terminal_summary(terminalreporter) -> None:
    total = sum(n for (_, status), n in STATUSES.items() if isinstance(status, int))
    terminalreporter.section(f"opdesk responses: {total} requests")
    for (op, status), n in sorted(STATUSES.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        terminalreporter.write_line(f"{n:6d}  {status}  {op}")
