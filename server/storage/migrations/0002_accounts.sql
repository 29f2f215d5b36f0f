-- Accounts (docs/accounts.md): a guest's player id made permanent with a handle and
-- passkeys; its sessions, link codes, recovery codes, the WebAuthn challenges issued,
-- and rate-limit events. Times are server ms since the Unix epoch (bigint).

create table accounts (
    player_id   text collate "C" primary key,   -- the guest's id, kept
    handle      text,                            -- as typed (NFKC); null once deleted
    handle_key  text collate "C",                -- case-folded TR39 skeleton; null once deleted
    created_at  bigint not null,
    deleted_at  bigint,
    check ((deleted_at is null) = (handle is not null and handle_key is not null))
);
-- one live account a handle, across every process: the index decides a race (nulls are
-- distinct, so deleted accounts hold no handle)
create unique index accounts_handle_key on accounts (handle_key);

create table account_passkeys (
    credential_id text collate "C" primary key,  -- base64url
    player_id     text collate "C" not null references accounts (player_id),
    public_key    bytea not null,                -- COSE
    sign_count    bigint not null,
    transports    text[] not null,
    backed_up     boolean not null,
    created_at    bigint not null,
    last_used_at  bigint
);
create index account_passkeys_player on account_passkeys (player_id, created_at);

create table account_sessions (
    id           text collate "C" primary key,
    player_id    text collate "C" not null references accounts (player_id),
    device       text not null,
    created_at   bigint not null,
    last_seen_at bigint not null,
    revoked_at   bigint                          -- the broadcast to close sockets reads it
);
create index account_sessions_player on account_sessions (player_id, created_at);

create table account_link_codes (
    digest     text collate "C" primary key,     -- sha256 of the code: no live code in a dump
    player_id  text collate "C" not null references accounts (player_id),
    created_at bigint not null,
    expires_at bigint not null,
    used_at    bigint
);
create index account_link_codes_expiry on account_link_codes (expires_at);

create table account_recovery_codes (
    player_id  text collate "C" not null references accounts (player_id),
    digest     bytea not null,                   -- scrypt(code, salt)
    salt       bytea not null,                   -- the same for the ten codes of a set
    created_at bigint not null,
    used_at    bigint,
    primary key (player_id, digest)
);

-- issued WebAuthn challenges: shared by every process (options from one, the response
-- to another); taken once (used_at), remembered a while past expiry for a precise error
create table account_challenges (
    value      text collate "C" primary key,     -- base64url
    ceremony   text not null check (ceremony in ('register', 'authenticate')),
    player_id  text collate "C",
    issued_at  bigint not null,
    expires_at bigint not null,
    used_at    bigint
);
create index account_challenges_expiry on account_challenges (expires_at);

create table account_rate_events (
    bucket text collate "C" not null,            -- '<limit>:<subject>'
    at     bigint not null
);
create index account_rate_events_bucket on account_rate_events (bucket, at);
create index account_rate_events_at on account_rate_events (at);
