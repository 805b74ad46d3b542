-- Every change to a key, by any path (the gateway, `tandem keys revoke`, an UPDATE or a
-- DELETE typed by hand), is announced on `tandem_api_keys` with the key id (public, not
-- secret) when its transaction commits; a TRUNCATE announces '' (every key). Gateways
-- listen, and drop the key from the memory that spares each call a database read.
CREATE FUNCTION gateway_api_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_LEVEL = 'ROW' THEN
        PERFORM pg_notify('tandem_api_keys', OLD.key_id);
    ELSE
        PERFORM pg_notify('tandem_api_keys', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION gateway_api_key_changed();
CREATE TRIGGER api_keys_truncated AFTER TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION gateway_api_key_changed();
