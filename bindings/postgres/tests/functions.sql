-- Every function of the extension against its SQL expectations: result types, NULL handling,
-- errors with their SQLSTATE, decoding what was generated. Run by scripts/postgres-test with
-- psql -v ON_ERROR_STOP=1: the first failed assertion stops it with its message.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

CREATE FUNCTION pg_temp.expect(ok boolean, what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION 'expectation failed: %', what;
    END IF;
END $$;

-- The SQLSTATE (and the message, for a second look) `sql` fails with.
CREATE FUNCTION pg_temp.expect_error(sql text, state text, message_part text DEFAULT '')
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    got text;
    msg text;
BEGIN
    BEGIN
        EXECUTE sql;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS got = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
        IF got <> state OR position(message_part IN msg) = 0 THEN
            RAISE EXCEPTION '% failed with % (%), expected % containing "%"', sql, got, msg, state, message_part;
        END IF;
        RETURN;
    END;
    RAISE EXCEPTION '% succeeded, expected SQLSTATE %', sql, state;
END $$;

-- Result types.
SELECT pg_temp.expect(pg_typeof(idforge.uuid7()) = 'uuid'::regtype, 'uuid7() is uuid');
SELECT pg_temp.expect(pg_typeof(idforge.uprotocol()) = 'uuid'::regtype, 'uprotocol() is uuid');
SELECT pg_temp.expect(pg_typeof(idforge.uprotocol_v8()) = 'uuid'::regtype, 'uprotocol_v8() is uuid');
SELECT pg_temp.expect(pg_typeof(idforge.uuid4()) = 'uuid'::regtype, 'uuid4() is uuid');
SELECT pg_temp.expect(pg_typeof(idforge.locality()) = 'uuid'::regtype, 'locality() is uuid');
SELECT pg_temp.expect(pg_typeof(idforge.snowflake(1)) = 'bigint'::regtype, 'snowflake() is bigint');
SELECT pg_temp.expect(pg_typeof(idforge.sonyflake(1)) = 'bigint'::regtype, 'sonyflake() is bigint');
SELECT pg_temp.expect(pg_typeof(idforge.global_id(1)) = 'bigint'::regtype, 'global_id() is bigint');
SELECT pg_temp.expect(pg_typeof(idforge.tsid(1)) = 'bigint'::regtype, 'tsid() is bigint');
SELECT pg_temp.expect(pg_typeof(idforge.nanots()) = 'bigint'::regtype, 'nanots() is bigint');
SELECT pg_temp.expect(pg_typeof(idforge.global_id_128(1)) = 'numeric'::regtype, 'global_id_128() is numeric');
SELECT pg_temp.expect(pg_typeof(idforge.ulid()) = 'text'::regtype, 'ulid() is text');
SELECT pg_temp.expect(pg_typeof(idforge.typeid('user')) = 'text'::regtype, 'typeid() is text');
SELECT pg_temp.expect(pg_typeof(idforge.objectid(1)) = 'text'::regtype, 'objectid() is text');
SELECT pg_temp.expect(pg_typeof(idforge.xid(1)) = 'text'::regtype, 'xid() is text');
SELECT pg_temp.expect(pg_typeof(idforge.id('snowflake', 1)) = 'text'::regtype, 'id() is text');
SELECT pg_temp.expect(pg_typeof(idforge.inspect(idforge.uuid7()::text)) = 'jsonb'::regtype, 'inspect() is jsonb');
SELECT pg_temp.expect(pg_typeof(idforge.uuid7_time(idforge.uuid7())) = 'timestamptz'::regtype, 'uuid7_time() is timestamptz');
SELECT pg_temp.expect(pg_typeof(idforge.snowflake_time(idforge.snowflake(1))) = 'timestamptz'::regtype, 'snowflake_time() is timestamptz');

-- Shapes of the values.
SELECT pg_temp.expect(substr(idforge.uuid7()::text, 15, 1) = '7', 'uuid7 has version 7');
SELECT pg_temp.expect(substr(idforge.uuid4()::text, 15, 1) = '4', 'uuid4 has version 4');
SELECT pg_temp.expect(substr(idforge.uprotocol_v8()::text, 15, 1) = '8', 'uprotocol_v8 has version 8');
SELECT pg_temp.expect(idforge.ulid() ~ '^[0-9A-HJKMNP-TV-Z]{26}$', 'ulid is 26 Crockford base32 characters');
SELECT pg_temp.expect(idforge.typeid('user') ~ '^user_[0-9a-hjkmnp-tv-z]{26}$', 'typeid has its prefix');
SELECT pg_temp.expect(idforge.typeid() ~ '^[0-9a-hjkmnp-tv-z]{26}$', 'typeid without prefix is the bare suffix');
SELECT pg_temp.expect(idforge.objectid(3) ~ '^[0-9a-f]{24}$', 'objectid is 24 hex digits');
SELECT pg_temp.expect(length(idforge.xid(3)) = 20, 'xid is 20 characters');
SELECT pg_temp.expect(idforge.id('uuid7', format => 'hex') ~ '^[0-9a-f]{32}$', 'id() in hex');
SELECT pg_temp.expect(idforge.id('custom', layout => 'time:41,node:10,counter:12,tick=1ms,epoch=2020-01-01T00:00:00Z', node => 5) ~ '^[0-9]+$', 'custom layout, decimal');
SELECT pg_temp.expect(idforge.id('nanots-host', node => 42) ~ '42$', 'nanots-host ids end in the host id');
SELECT pg_temp.expect(idforge.global_id_128(7) > 0, 'global_id_128 is a positive number');
SELECT pg_temp.expect(idforge.global_id(511) > 0, 'global_id of node 511 fits bigint');

-- Order within a session, for every time-ordered scheme.
SELECT pg_temp.expect(bool_and(a < b), 'uuid7 increases')
FROM (SELECT u AS a, lead(u) OVER (ORDER BY o) AS b
      FROM (SELECT idforge.uuid7() AS u, g AS o FROM generate_series(1, 20000) g) s) t
WHERE b IS NOT NULL;
SELECT pg_temp.expect(bool_and(a < b), 'snowflake increases')
FROM (SELECT u AS a, lead(u) OVER (ORDER BY o) AS b
      FROM (SELECT idforge.snowflake(2) AS u, g AS o FROM generate_series(1, 20000) g) s) t
WHERE b IS NOT NULL;
SELECT pg_temp.expect(bool_and(a COLLATE "C" < b COLLATE "C"), 'ulid text increases')
FROM (SELECT u AS a, lead(u) OVER (ORDER BY o) AS b
      FROM (SELECT idforge.ulid() AS u, g AS o FROM generate_series(1, 5000) g) s) t
WHERE b IS NOT NULL;

-- Series: the count asked for, increasing, distinct; 0 gives nothing; negative is refused.
SELECT pg_temp.expect(count(*) = 5000 AND count(DISTINCT u) = 5000, 'uuid7_series(5000) gives 5000 distinct')
FROM idforge.uuid7_series(5000) u;
SELECT pg_temp.expect(bool_and(a < b), 'uuid7_series increases')
FROM (SELECT u AS a, lead(u) OVER (ORDER BY o) AS b
      FROM idforge.uuid7_series(3000) WITH ORDINALITY AS s(u, o)) t
WHERE b IS NOT NULL;
SELECT pg_temp.expect(bool_and(a < b) AND count(*) = 2999, 'snowflake_series increases')
FROM (SELECT u AS a, lead(u) OVER (ORDER BY o) AS b
      FROM idforge.snowflake_series(4, 3000) WITH ORDINALITY AS s(u, o)) t
WHERE b IS NOT NULL;
SELECT pg_temp.expect(count(*) = 1000 AND count(DISTINCT u) = 1000, 'ulid_series')
FROM idforge.ulid_series(1000) u;
SELECT pg_temp.expect(count(*) = 100, 'id_series') FROM idforge.id_series('tsid', 100, node => 1) u;
SELECT pg_temp.expect(count(*) = 0, 'uuid7_series(0) is empty') FROM idforge.uuid7_series(0);
SELECT pg_temp.expect_error('SELECT * FROM idforge.uuid7_series(-1)', '22023', 'the count must be 0 or more');

-- NULL in, NULL out (strict functions); defaults where an argument is optional.
SELECT pg_temp.expect(idforge.snowflake(NULL) IS NULL, 'snowflake(NULL) is NULL');
SELECT pg_temp.expect(idforge.sonyflake(NULL) IS NULL, 'sonyflake(NULL) is NULL');
SELECT pg_temp.expect(idforge.uuid7_time(NULL) IS NULL, 'uuid7_time(NULL) is NULL');
SELECT pg_temp.expect(idforge.snowflake_time(NULL) IS NULL, 'snowflake_time(NULL) is NULL');
SELECT pg_temp.expect(idforge.inspect(NULL) IS NULL, 'inspect(NULL) is NULL');
SELECT pg_temp.expect(idforge.id(NULL) IS NULL, 'id(NULL) is NULL');
SELECT pg_temp.expect(count(*) = 0, 'uuid7_series(NULL) is empty') FROM idforge.uuid7_series(NULL);
SELECT pg_temp.expect(idforge.nanots(NULL) IS NOT NULL, 'nanots(NULL): no tag');

-- Decoding what was generated.
SELECT pg_temp.expect(abs(extract(epoch FROM idforge.uuid7_time(idforge.uuid7()) - clock_timestamp())) < 2,
                      'uuid7_time is now');
SELECT pg_temp.expect(abs(extract(epoch FROM idforge.snowflake_time(idforge.snowflake(5)) - clock_timestamp())) < 2,
                      'snowflake_time is now');
SELECT pg_temp.expect(idforge.snowflake_node(idforge.snowflake(517)) = 517, 'snowflake_node');
SELECT pg_temp.expect(idforge.snowflake_counter(idforge.snowflake(5)) BETWEEN 0 AND 4095, 'snowflake_counter');
SELECT pg_temp.expect(idforge.uuid7_counter(idforge.uuid7()) BETWEEN 0 AND 4095, 'uuid7_counter');
SELECT pg_temp.expect(idforge.uuid7_time('017f22e2-79b0-7cc3-98c4-dc0c0c07398f') = '2022-02-22 19:22:22+00',
                      'uuid7_time of the RFC 9562 example');
SELECT pg_temp.expect(idforge.inspect('017F22E2-79B0-7CC3-98C4-DC0C0C07398F') ->> 'scheme' = 'uuid-v7', 'inspect a UUIDv7');
SELECT pg_temp.expect((idforge.inspect('017F22E2-79B0-7CC3-98C4-DC0C0C07398F') ->> 'version')::int = 7, 'inspect version');
SELECT pg_temp.expect((idforge.inspect(idforge.snowflake(33)::text, 'snowflake') ->> 'node')::int = 33, 'inspect a snowflake: node');
SELECT pg_temp.expect(idforge.inspect(idforge.typeid('user')) ->> 'prefix' = 'user', 'inspect a TypeID: prefix');
SELECT pg_temp.expect(idforge.inspect(idforge.ulid(), 'ulid') ? 'time', 'inspect a ULID: time');

-- Errors, with their SQLSTATE.
SELECT pg_temp.expect_error('SELECT idforge.snowflake(1024)', '22023', 'node id 1024 is out of range for snowflake');
SELECT pg_temp.expect_error('SELECT idforge.snowflake(-1)', '22023', 'negative');
SELECT pg_temp.expect_error('SELECT idforge.global_id(600)', '22003', 'do not fit a signed bigint');
SELECT pg_temp.expect_error('SELECT idforge.id(''snowflak'')', '22023', 'did you mean snowflake?');
SELECT pg_temp.expect_error('SELECT idforge.id(''snowflake'')', '22023', 'needs a node id');
SELECT pg_temp.expect_error('SELECT idforge.id(''uuid7'', node => 1)', '22023', 'has no node field');
SELECT pg_temp.expect_error('SELECT idforge.id(''snowflake'', 1, format => ''uuid'')', '22023', '');
SELECT pg_temp.expect_error('SELECT idforge.typeid(''User'')', '22023', '');
SELECT pg_temp.expect_error('SELECT idforge.inspect(''not an id'')', '22P02', '');
SELECT pg_temp.expect_error('SELECT idforge.inspect(''123'', ''uuid9'')', '22023', 'uuid9');
SELECT pg_temp.expect_error('SELECT idforge.uuid7_time(''00000000-0000-4000-8000-000000000000'')', '22P02', '');
SELECT pg_temp.expect_error('SELECT idforge.snowflake_time(-5)', '22023', 'positive');
SET idforge.clock = 'ticker';
SELECT pg_temp.expect_error('SELECT idforge.uuid7()', '0A000', 'must not start threads');
RESET idforge.clock;
SET idforge.clock = 'precise';
SELECT pg_temp.expect(idforge.uuid7() IS NOT NULL, 'the precise clock');
RESET idforge.clock;

-- The stamp is in the state file under the data directory, one per scheme and node.
SELECT pg_temp.expect(idforge.state_path('uuid7') = current_setting('data_directory') || '/idforge/uuid7.state',
                      'uuid7 state file under the data directory: ' || coalesce(idforge.state_path('uuid7'), 'none'));
SELECT pg_temp.expect(idforge.state_path('snowflake', 1) LIKE '%/idforge/snowflake-node1.state', 'snowflake state file per node');
SELECT pg_temp.expect(idforge.state_path('uuid4') IS NULL, 'uuid4 has no state file');

-- Nothing above started a thread in this backend.
SELECT pg_temp.expect(pg_read_file('/proc/self/status') ~ E'\nThreads:\t1\n', 'the backend has one thread');

SELECT 'functions.sql: all expectations met' AS result;
