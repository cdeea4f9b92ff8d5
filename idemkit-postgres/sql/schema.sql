-- idemkit-postgres schema 2 for the table idemkit_records.
-- Each row is one idempotency key: a claim (completed = false) or a stored
-- response. Times are the database's clock_timestamp().
CREATE TABLE idemkit_records (
    key                 text        PRIMARY KEY,
    token               bytea       NOT NULL,
    fingerprint         text        NOT NULL,
    fingerprint_version bigint      NOT NULL,
    completed           boolean     NOT NULL DEFAULT false,
    reclaimed           boolean     NOT NULL DEFAULT false,
    waiters             boolean     NOT NULL DEFAULT false,
    claimed_at          timestamptz NOT NULL,
    lease_until         timestamptz NOT NULL,
    purge_after         timestamptz NOT NULL,
    completed_at        timestamptz,
    status              integer,
    header_names        text[],
    header_values       bytea[],
    body                bytea
);
CREATE INDEX idemkit_records_purge_after ON idemkit_records (purge_after);
COMMENT ON TABLE idemkit_records IS 'idemkit-postgres schema 2';
