//! DPoP at the resource server (filled in below).
