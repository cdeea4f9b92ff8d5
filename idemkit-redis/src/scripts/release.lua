-- Release. ARGV: token. Reply: {1 if released else 0, now}.
if not held(ARGV[1]) then
  return {0, int(now)}
end
redis.call('DEL', key)
redis.call('PUBLISH', key, 'released')
return {1, int(now)}
