-- opdesk schema v25: the names the consent words give what lives on another ASE, learnt when it was met. A
-- grant's client wallet on another ASE: the publicName its wallet address document showed when it asked. A
-- quote's receiver on another ASE: the wallet address its incoming payment names, and that wallet's publicName.
ALTER TABLE grants ADD COLUMN client_public_name TEXT;
ALTER TABLE quotes ADD COLUMN receiver_wallet TEXT;
ALTER TABLE quotes ADD COLUMN receiver_public_name TEXT;
