"""Trust under faults and abuse, end to end over real Redis and WebSockets (issue #10):
acts and races."""

from __future__ import annotations

from crescent_wire import protocol as p
from tests.server.test_race_e2e import DEAL, legal_line, wait_until_started
from tests.server.wsclient import open_client


async def test_reused_seq_with_another_action_is_seq_conflict(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    code = (await ada.create(deal=DEAL, seats=2)).room["code"]
    await ada.call(p.Start(room=code))
    await wait_until_started(ada, code)
    line = legal_line(DEAL, 2)
    assert isinstance(await ada.act(code, 1, line[0]), p.Ack)
    conflict = await ada.act(code, 1, "redeal")
    assert isinstance(conflict, p.Error) and conflict.code == "seq_conflict"
    # After a reconnect the game is rebuilt from Redis: still told apart.
    await ada.close()
    again = await open_client(client, "/ws", token=ada.token)
    snap = await again.join(code)
    assert snap.you["last_seq"] == 1
    conflict = await again.act(code, 1, "redeal")
    assert isinstance(conflict, p.Error) and conflict.code == "seq_conflict"
    same = await again.act(code, 1, line[0])
    assert isinstance(same, p.Ack) and same.duplicate and same.view["moves"] == 1
    nxt = await again.act(code, 2, line[1])
    assert isinstance(nxt, p.Ack) and not nxt.duplicate and nxt.view["moves"] == 2
