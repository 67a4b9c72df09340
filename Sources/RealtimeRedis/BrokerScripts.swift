/// The broker's Lua scripts. Every key of one namespace shares a `{namespace}` hash tag (ADR
/// 0002: an app's sequence and its channels live on one Redis primary), so each script may touch
/// them all atomically.
///
/// Keys per namespace `N`:
/// - `{N}:meta` hash: `e` epoch (8 hex digits), `s` the stream sequence, `k` second of the last tick.
/// - `{N}:ticks` sorted set: member a sequence, score the Redis second it was reached (at most
///   one per second, kept for the history TTL plus a minute): bounds what expired channels held.
/// - `{N}:m:<channel>` hash: `e` epoch, `o` top offset, `l` sequence of the newest message,
///   `b` sequence before the channel's first message, `t` sequence of the newest trimmed entry.
///   Expires with the stream (history TTL after the last publish).
/// - `{N}:h:<channel>` stream: entry id `<sequence>-0`, field `f` the framed message.
/// - `{N}:r:<channel>` string: the retained message's frame; expires the retained TTL after its
///   publish (ADR 0028), so it may outlive the channel's history.
/// - pub/sub `{N}:c:<channel>`: frames of live messages.
enum BrokerScripts {
    /// Creates the epoch when the meta hash is gone (first use, flush, restart without persistence).
    private static let epochPrelude = """
    local epoch = redis.call('HGET', KEYS[1], 'e')
    if not epoch then
      epoch = ARGV[1]
      redis.call('HSET', KEYS[1], 'e', epoch, 's', 0)
      redis.call('DEL', KEYS[2])
    end
    """

    /// KEYS: meta, ticks, then per message: channel meta, stream, retained.
    /// ARGV: candidate epoch, history size, history TTL seconds, retained TTL seconds, then per
    /// message: channel name, pub/sub channel, event, retain (`1`/`0`), data.
    /// Returns `{epoch, sequence₁, offset₁, sequence₂, offset₂, …}`.
    static let publish = RedisScript(epochPrelude + """

    local maxlen = tonumber(ARGV[2])
    local ttl = tonumber(ARGV[3])
    local rttl = tonumber(ARGV[4])
    local n = (#KEYS - 2) / 3
    local out = {epoch}
    local seq = 0
    for i = 1, n do
      local cm, st, rk = KEYS[3 * i], KEYS[3 * i + 1], KEYS[3 * i + 2]
      local a = 4 + 5 * (i - 1)
      local channel, pubsub, event, retain, data = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
      seq = redis.call('HINCRBY', KEYS[1], 's', 1)
      local c = redis.call('HMGET', cm, 'e', 'o', 'l')
      local offset, prev
      if c[1] ~= epoch then
        -- A channel of an earlier epoch, or expired: start its history again.
        redis.call('DEL', st)
        redis.call('HSET', cm, 'e', epoch, 'b', seq - 1, 't', 0)
        offset = 1
        prev = 0
      else
        offset = tonumber(c[2]) + 1
        prev = tonumber(c[3])
      end
      redis.call('HSET', cm, 'o', offset, 'l', seq)
      local len = redis.call('XLEN', st)
      if len >= maxlen then
        -- XADD below trims exactly this many: remember the newest of them, so a resume from
        -- before it is known to have a gap.
        local gone = redis.call('XRANGE', st, '-', '+', 'COUNT', len - maxlen + 1)
        redis.call('HSET', cm, 't', string.match(gone[#gone][1], '^(%d+)'))
      end
      local frame = epoch .. '\\n' .. seq .. '\\n' .. offset .. '\\n' .. prev .. '\\n' .. retain .. '\\n' .. event .. '\\n' .. channel .. '\\n' .. data
      redis.call('XADD', st, 'MAXLEN', maxlen, seq .. '-0', 'f', frame)
      redis.call('EXPIRE', st, ttl)
      redis.call('EXPIRE', cm, ttl)
      if retain == '1' then redis.call('SET', rk, frame, 'EX', rttl) end
      redis.call('PUBLISH', pubsub, frame)
      out[#out + 1] = seq
      out[#out + 1] = offset
    end
    local now = redis.call('TIME')[1]
    if redis.call('HGET', KEYS[1], 'k') ~= now then
      redis.call('HSET', KEYS[1], 'k', now)
      redis.call('ZADD', KEYS[2], now, seq)
      redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', tonumber(now) - ttl - 60)
    end
    return out
    """)

    /// KEYS: meta, ticks, then per channel: channel meta, stream, retained.
    /// ARGV: candidate epoch, since (`-1`: no history), history TTL seconds, history size,
    /// retained wanted (`1`/`0`).
    /// Returns `{epoch, sequence, floor, rows…}`, a row per channel
    /// `{known (1/0), b, t, l, retained frame or nil, {frames after since…}}`. `floor` is a
    /// sequence at or above every message of a channel incarnation that expired.
    static let read = RedisScript(epochPrelude + """

    local seq = tonumber(redis.call('HGET', KEYS[1], 's'))
    local since = tonumber(ARGV[2])
    local ttl = tonumber(ARGV[3])
    local limit = tonumber(ARGV[4])
    local now = tonumber(redis.call('TIME')[1])
    local floor = seq
    local tick = redis.call('ZRANGEBYSCORE', KEYS[2], now - ttl, '+inf', 'LIMIT', 0, 1)
    if tick[1] then floor = tonumber(tick[1]) end
    local out = {epoch, seq, floor}
    local n = (#KEYS - 2) / 3
    for i = 1, n do
      local cm, st, rk = KEYS[3 * i], KEYS[3 * i + 1], KEYS[3 * i + 2]
      local c = redis.call('HMGET', cm, 'e', 'b', 't', 'l')
      local row = {0, 0, 0, 0, false, {}}
      if c[1] == epoch then
        row[1] = 1
        row[2] = tonumber(c[2])
        row[3] = tonumber(c[3])
        row[4] = tonumber(c[4])
        if since >= 0 then
          local frames = {}
          for j, e in ipairs(redis.call('XRANGE', st, since + 1, '+', 'COUNT', limit)) do frames[j] = e[2][2] end
          row[6] = frames
        end
      end
      if ARGV[5] == '1' then row[5] = redis.call('GET', rk) end
      out[#out + 1] = row
    end
    return out
    """)

    /// KEYS: meta, ticks, then channel metas. ARGV: candidate epoch.
    /// Returns `{epoch, sequence, l₁, l₂, …}` (0 for a channel with no message in this epoch).
    static let positions = RedisScript(epochPrelude + """

    local out = {epoch, tonumber(redis.call('HGET', KEYS[1], 's'))}
    for i = 3, #KEYS do
      local c = redis.call('HMGET', KEYS[i], 'e', 'l')
      if c[1] == epoch then out[#out + 1] = tonumber(c[2]) else out[#out + 1] = 0 end
    end
    return out
    """)
}
