-- The archive (docs/archive.md): finished games, each racer's log and result, finished
-- tournaments and daily days. Times are server ms since the Unix epoch (bigint). Ids,
-- players and deals compare byte by byte (collate "C"): the same order as Python's.

create table archive_games (
    id          text collate "C" primary key,
    kind        text not null check (kind in ('room', 'daily', 'tournament', 'practice')),
    deal        text collate "C" not null,
    variant     text not null,
    origin      text not null,            -- room code, daily day, tournament id, or ''
    start_at    bigint not null,
    ended_at    bigint not null,
    revealed_at bigint not null,          -- nothing is read before it
    racers      smallint not null
);
-- retention: the oldest games of a kind
create index archive_games_expiry on archive_games (kind, ended_at);

create table archive_racers (
    game_id     text collate "C" not null references archive_games (id) on delete cascade,
    seat        smallint not null,        -- the racer's index in the game
    player      text collate "C" not null,
    name        text not null,
    -- the game's, copied so that a history page and a deal's board each read one index
    deal        text collate "C" not null,
    ended_at    bigint not null,
    revealed_at bigint not null,
    -- the result
    rank        smallint not null,
    status      text not null,
    time_ms     integer not null,
    moves       integer not null,
    foundation  smallint not null,
    -- the log: actions separated by spaces, and the offset (ms after start_at) of each
    actions     text not null,
    offsets     integer[] not null,
    -- the board's order (server.core.archive.board_key)
    board_finished smallint generated always as
        (case when status = 'won' then 0 else 1 end) stored,
    board_score integer generated always as
        (case when status = 'won' then time_ms else -foundation end) stored,
    primary key (game_id, seat)
);
-- a player's history, newest first, keyset-paginated on (ended_at, game_id)
create index archive_racers_history on archive_racers (player, ended_at desc, game_id desc);
-- a deal's board, best first, keyset-paginated on the whole key
create index archive_racers_board
    on archive_racers (deal, board_finished, board_score, moves, game_id, seat);

create table archive_tournaments (
    id          text primary key,
    ended_at    bigint not null,
    revealed_at bigint not null,
    record      jsonb not null            -- name, variant, started_at, standings, games
);

create table archive_daily_days (
    day         text primary key,         -- YYYY-MM-DD
    deal        text not null,
    revealed_at bigint not null,
    record      jsonb not null            -- attempts, board
);
