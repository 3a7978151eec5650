-- opdesk schema v19 (PostgreSQL twin of migrations/0019_standing_accounts.sql): the accounts that stand
-- (wallets, settlement, peers, liquidity), without the account each outgoing payment gets for its money in
-- flight: the console's overview and wallet list read these, and the payment accounts grow by one per payment
-- for ever.
CREATE INDEX accounts_standing ON accounts (id) WHERE kind <> 'payment';
