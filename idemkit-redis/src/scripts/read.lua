-- Read. Reply: {state, now, note, record fields...}: state 'absent' (no record, one that
-- is gone, or a value that is not a record: the note says why), 'claimed' or
-- 'completed' (with the record). Writes nothing.
local record, corrupt = load()
if corrupt then
  return {'absent', int(now), corrupt}
end
if not record or now > record.gone_at then
  return {'absent', int(now), ''}
end
return {record.state, int(now), '', described(record)}
