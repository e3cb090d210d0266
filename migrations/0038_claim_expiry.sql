-- Claims whose lease ran out, found by when it runs out. The claim found them through
-- inbox_one_in_hand with a bitmap scan, which visits every heap page its entries point to and
-- never marks an entry dead: between two vacuums those are mostly claims long finished (under
-- reference-2, 289 entries and 191 pages on every claim, nine tenths of its reads). Here a
-- finished claim's entry keeps its lease's end, still ahead, so the claim's range scan
-- (locked_until < now()) does not reach it; once that end has passed, the first scan to visit
-- the entry marks it dead for the rest.
CREATE INDEX inbox_claim_expiry ON inbox (locked_until) WHERE state = 'processing';
