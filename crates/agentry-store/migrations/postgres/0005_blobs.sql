-- The bytes of images, documents and audio in messages, once each whatever the runs and
-- messages that carry them: messages hold a reference (the SHA-256 and size), the bytes are here.
CREATE TABLE blobs (
    -- The SHA-256 of the bytes, as 64 lowercase hex digits.
    sha256 TEXT PRIMARY KEY,
    size   BIGINT NOT NULL,
    bytes  BYTEA NOT NULL
);
