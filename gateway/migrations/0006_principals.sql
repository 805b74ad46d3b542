-- Principals (issue 47): the end users a key with the `act_as` scope calls for.
--
-- A key may now hold `act_as`: each of its data calls names the principal it is made for,
-- and sees only what that principal may. A key without it is a service key (the
-- tenant's full view, as before).
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_known;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_known
    CHECK (cardinality(scopes) > 0 AND scopes <@ '{ask,ingest,teach,admin,act_as}'::text[]);

-- A conversation belongs to the principal it was started for (NULL: a service key's).
-- A principal lists, reads, continues and deletes only its own; a service key keeps the
-- tenant's full view. The gateway filters by it, and a restrictive policy enforces it
-- beside the tenant policy: every transaction of the conversation role sets
-- `tandem.principal_view` ('all' for a service key, 'own' for a principal) and
-- `tandem.principal_id`; no setting, or any other value, means no rows (never wider).
ALTER TABLE gateway_conversations ADD COLUMN principal_id text
    CHECK (principal_id IS NULL OR length(principal_id) BETWEEN 1 AND 256);
CREATE INDEX gateway_conversations_principal_listing
    ON gateway_conversations (tenant_id, principal_id, update_time DESC, conversation_id DESC)
    WHERE principal_id IS NOT NULL;

CREATE POLICY gateway_conversations_principal ON gateway_conversations AS RESTRICTIVE
    USING (
        current_setting('tandem.principal_view', true) = 'all'
        OR (current_setting('tandem.principal_view', true) = 'own'
            AND principal_id = current_setting('tandem.principal_id', true))
    )
    WITH CHECK (
        current_setting('tandem.principal_view', true) = 'all'
        OR (current_setting('tandem.principal_view', true) = 'own'
            AND principal_id = current_setting('tandem.principal_id', true))
    );
-- A turn is visible only with its conversation (the subquery reads the conversation
-- under the policies above).
CREATE POLICY gateway_conversation_turns_principal ON gateway_conversation_turns AS RESTRICTIVE
    USING (EXISTS (
        SELECT 1 FROM gateway_conversations c
        WHERE c.tenant_id = gateway_conversation_turns.tenant_id
          AND c.conversation_id = gateway_conversation_turns.conversation_id
    ))
    WITH CHECK (EXISTS (
        SELECT 1 FROM gateway_conversations c
        WHERE c.tenant_id = gateway_conversation_turns.tenant_id
          AND c.conversation_id = gateway_conversation_turns.conversation_id
    ));
