-- A player's finished tournaments, for the public profile (docs/accounts.md, "The public
-- profile"): one row per ranked player of each archived tournament, written with the
-- tournament (server/storage/postgres_archive.py), newest first by player.
create table archive_tournament_players (
    tournament_id text not null references archive_tournaments (id) on delete cascade,
    player      text collate "C" not null,
    rank        integer not null,
    points      bigint not null,
    ended_at    bigint not null,
    revealed_at bigint not null,
    primary key (tournament_id, player)
);
create index archive_tournament_players_by_player
    on archive_tournament_players (player, ended_at desc, tournament_id desc);

-- the tournaments archived before this table
insert into archive_tournament_players
    (tournament_id, player, rank, points, ended_at, revealed_at)
select t.id, s ->> 'player', (s ->> 'rank')::integer, (s ->> 'points')::bigint,
       t.ended_at, t.revealed_at
from archive_tournaments t, jsonb_array_elements(t.record -> 'standings') as s
on conflict do nothing;
