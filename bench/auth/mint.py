#!/usr/bin/env python3
"""Key, JWKS and access token for the benchmark's resource-server rows (vellum-auth*).

usage: mint.py DIR ISSUER AUDIENCE

Writes DIR/jwks.json (the public half of a fresh P-256 key, kid "bench") and prints one ES256
access token for AUDIENCE from ISSUER, valid for a day, without `cnf` (a plain Bearer token:
the case DPoP `allowed` must not make dearer). The key never leaves DIR's process; a new one
is made on every run. Needs the `cryptography` package (Debian: python3-cryptography).
"""

import base64
import json
import sys
import time
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def main() -> None:
    out, issuer, audience = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    key = ec.generate_private_key(ec.SECP256R1())
    pub = key.public_key().public_numbers()
    jwk = {
        "kty": "EC",
        "crv": "P-256",
        "kid": "bench",
        "alg": "ES256",
        "use": "sig",
        "x": b64(pub.x.to_bytes(32, "big")),
        "y": b64(pub.y.to_bytes(32, "big")),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "jwks.json").write_text(json.dumps({"keys": [jwk]}))
    now = int(time.time())
    header = {"alg": "ES256", "typ": "at+jwt", "kid": "bench"}
    claims = {
        "iss": issuer,
        "aud": audience,
        "sub": "bench-user",
        "client_id": "mcpbench",
        "scope": "mcp",
        "iat": now,
        "exp": now + 86400,
    }
    signing_input = (
        b64(json.dumps(header, separators=(",", ":")).encode())
        + "."
        + b64(json.dumps(claims, separators=(",", ":")).encode())
    )
    der = key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der)
    print(signing_input + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big")))


if __name__ == "__main__":
    main()
