-- Where the panel links a TRON transaction hash: an https address with {hash} in it.
ALTER TABLE workspace
  ADD COLUMN tx_explorer text NOT NULL DEFAULT 'https://tronscan.org/#/transaction/{hash}'
  CHECK (tx_explorer LIKE 'https://%{hash}%' AND length(tx_explorer) <= 300);
