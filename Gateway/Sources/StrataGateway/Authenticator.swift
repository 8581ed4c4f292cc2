import Foundation
import HummingbirdBcrypt
import Logging
import NIOPosix
import PostgresNIO

/// HTTP Basic authentication of a database's users against their bcrypt hashes. Every request
/// reads the user's row (one indexed query), so a removed user, a new password or new channels
/// take effect at once; what is remembered, for `cacheLifetime`, is only that a password
/// matched a stored hash, so that bcrypt (~50 ms at cost 10) does not run on every request.
/// Only a keyed hash of the password is kept, never the password.
actor Authenticator {
    static let cacheLifetime: Duration = .seconds(600)
    static let maximumCacheEntries = 10_000

    private let pool: PostgresPool
    private let logger: Logger
    /// (stored bcrypt hash, keyed hash of the password) pairs verified, with their expiry.
    private var verified: [String: ContinuousClock.Instant] = [:]

    private var limiter: LoginLimiter

    init(pool: PostgresPool, logger: Logger, limiter: LoginLimiter) {
        self.pool = pool
        self.logger = logger
        self.limiter = limiter
    }

    /// A keyed hash of the password (Hasher is seeded at random per process).
    private static func key(_ password: String) -> Int {
        var hasher = Hasher()
        hasher.combine(password)
        return hasher.finalize()
    }

    /// The user that `authorization` (the header's value) names. Every refusal is the same 401
    /// (an unknown database, an unknown user and a wrong password alike, after the same bcrypt
    /// work, so that neither the answer nor its time tells which), or 429 past the limits of
    /// `limiter` (see LoginLimiter).
    func authenticate(database: String, authorization: String?, cookie: String? = nil, address: String?, gateway: Gateway? = nil) async throws -> GatewayUser {
        if authorization == nil, let gateway, let token = Sessions.token(fromCookie: cookie) {
            // A _session cookie: its user, if the session covers this database and the user
            // still exists there (with the rights it has now).
            guard let session = try await Sessions.lookup(token, gateway: gateway),
                  let (user, _) = try await Users.lookup(database: database, name: session.name, client: pool.client, logger: logger),
                  session.databases.contains(user.databaseID)
            else {
                throw GatewayError.unauthorized("the session has expired or does not cover this database: log in again")
            }
            return user
        }
        guard let authorization, authorization.lowercased().hasPrefix("basic ") else {
            throw GatewayError.unauthorized("this database needs HTTP Basic credentials of one of its users")
        }
        let encoded = authorization.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard let data = Data(base64Encoded: encoded), let decoded = String(data: data, encoding: .utf8),
              let colon = decoded.firstIndex(of: ":")
        else {
            throw GatewayError.unauthorized("malformed Basic credentials (expected base64 of user:password)")
        }
        let name = String(decoded[..<colon])
        let password = String(decoded[decoded.index(after: colon)...])
        return try await verify(database: database, name: name, password: password, address: address)
    }

    /// The user `name` of `database` when `password` is theirs (see `authenticate`).
    func verify(database: String, name: String, password: String, address: String?) async throws -> GatewayUser {
        if let wait = limiter.lockedOut(database: database, name: name, address: address, now: .now) {
            throw GatewayError.tooManyRequests("too many failed logins for this user or from this address: retry in \(wait) s", retryAfter: wait)
        }
        let found = try await Users.lookup(database: database, name: name, client: pool.client, logger: logger)
        let hash = found?.1 ?? Self.decoyHash
        let cacheKey = hash + "\u{0}" + String(Self.key(password))
        if let found, let expires = verified[cacheKey], expires > ContinuousClock.now {
            return found.0
        }
        // An unknown user or database runs the same bcrypt verification (against a decoy hash
        // of the same cost), so its answer takes as long as a wrong password's.
        let matches = try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash) }
        guard let found, matches else {
            limiter.failed(database: database, name: name, address: address, now: .now)
            throw GatewayError.unauthorized("Name or password is incorrect.")
        }
        limiter.succeeded(database: database, name: name)
        if verified.count >= Self.maximumCacheEntries { verified.removeAll() }
        verified[cacheKey] = ContinuousClock.now + Self.cacheLifetime
        return found.0
    }

    /// The users named `name` whose password is `password`, in every database that has one
    /// (`_session`, `_all_dbs`: users belong to databases). At most `maximumDatabasesPerName`
    /// databases are tried; an unknown name costs one decoy verification.
    func verifyAnywhere(name: String, password: String, address: String?) async throws -> [GatewayUser] {
        var databases: [String] = []
        let rows = try await pool.client.query(
            "SELECT d.name FROM users u JOIN databases d ON d.id = u.db WHERE u.name = \(name) ORDER BY d.name LIMIT \(Self.maximumDatabasesPerName)",
            logger: logger)
        for try await database in rows.decode(String.self) { databases.append(database) }
        if databases.isEmpty { databases = ["_"] }  // the decoy: the same work, the same 401
        var users: [GatewayUser] = []
        var lastError: (any Error)? = nil
        for database in databases {
            do {
                users.append(try await verify(database: database, name: name, password: password, address: address))
            } catch let error as GatewayError where error.status == 401 {
                lastError = error
            }
        }
        if users.isEmpty, let lastError { throw lastError }
        return users
    }

    /// The most databases `verifyAnywhere` tries for one name.
    static let maximumDatabasesPerName = 16

    /// A bcrypt hash of a random password at the users' cost, computed once per process: the
    /// verification an unknown user costs.
    static let decoyHash: String = Bcrypt.hash(String(UInt64.random(in: .min ... .max), radix: 36), cost: Users.bcryptCost)
}
