/// Bounds password guessing (issue 24): failed logins are counted per user (database and name)
/// and per client address over a fixed window; past the limit, every login of that user or from
/// that address is refused with 429 until the window ends, whatever the password, so a guess
/// made during the lock-out tells nothing. The counts live in this process (each gateway process
/// of a cluster keeps its own).
struct LoginLimiter: Sendable {
    /// Failed logins of one user allowed per window.
    var perUser: Int
    /// Failed logins from one address allowed per window.
    var perAddress: Int
    /// The window's length.
    var window: Duration

    /// The most keys remembered (beyond it the oldest windows are dropped first).
    static let maximumKeys = 100_000

    private struct Count {
        var failures: Int
        var until: ContinuousClock.Instant
    }

    private var counts: [String: Count] = [:]

    init(perUser: Int, perAddress: Int, window: Duration) {
        self.perUser = perUser
        self.perAddress = perAddress
        self.window = window
    }

    private static func userKey(_ database: String, _ name: String) -> String { "u\u{0}" + database + "\u{0}" + name }
    private static func addressKey(_ address: String) -> String { "a\u{0}" + address }

    /// Seconds until the lock-out of this user or address ends, nil when not locked out.
    mutating func lockedOut(database: String, name: String, address: String?, now: ContinuousClock.Instant) -> Int? {
        var wait: Duration? = nil
        for (key, limit) in keys(database: database, name: name, address: address) {
            guard let count = counts[key] else { continue }
            if count.until <= now {
                counts[key] = nil
            } else if count.failures >= limit {
                let left = count.until - now
                wait = max(wait ?? .zero, left)
            }
        }
        return wait.map { max(1, Int(($0 / .seconds(1)).rounded(.up))) }
    }

    /// Counts one failed login.
    mutating func failed(database: String, name: String, address: String?, now: ContinuousClock.Instant) {
        if counts.count >= Self.maximumKeys {
            counts = counts.filter { $0.value.until > now }
            if counts.count >= Self.maximumKeys { counts.removeAll() }
        }
        for (key, _) in keys(database: database, name: name, address: address) {
            if var count = counts[key], count.until > now {
                count.failures += 1
                counts[key] = count
            } else {
                counts[key] = Count(failures: 1, until: now + window)
            }
        }
    }

    /// A successful login ends its user's count (not its address's).
    mutating func succeeded(database: String, name: String) {
        counts[Self.userKey(database, name)] = nil
    }

    private func keys(database: String, name: String, address: String?) -> [(String, Int)] {
        var keys = [(Self.userKey(database, name), perUser)]
        if let address { keys.append((Self.addressKey(address), perAddress)) }
        return keys
    }
}
