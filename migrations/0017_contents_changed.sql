-- Workers keep each bot's contents and their gates in memory (botedge.gate.ContentCache). Any
-- change to what they were read from announces itself, once per statement, on `contents`.
CREATE FUNCTION botedge_contents_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('contents', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER contents_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON contents
    FOR EACH STATEMENT EXECUTE FUNCTION botedge_contents_changed();
CREATE TRIGGER contents_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON content_gate_channels
    FOR EACH STATEMENT EXECUTE FUNCTION botedge_contents_changed();
CREATE TRIGGER contents_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON bot_channels
    FOR EACH STATEMENT EXECUTE FUNCTION botedge_contents_changed();
CREATE TRIGGER contents_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON channels
    FOR EACH STATEMENT EXECUTE FUNCTION botedge_contents_changed();
