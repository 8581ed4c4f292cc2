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

    init(pool: PostgresPool, logger: Logger) {
        self.pool = pool
        self.logger = logger
    }

    /// A keyed hash of the password (Hasher is seeded at random per process).
    private static func key(_ password: String) -> Int {
        var hasher = Hasher()
        hasher.combine(password)
        return hasher.finalize()
    }

    /// The user that `authorization` (the header's value) names, or 401 (404 when the database
    /// does not exist).
    func authenticate(database: String, authorization: String?) async throws -> GatewayUser {
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
        guard let (user, hash) = try await Users.lookup(database: database, name: name, client: pool.client, logger: logger) else {
            if try await Databases.id(of: database, client: pool.client, logger: logger) == nil {
                throw GatewayError.notFound("no database named '\(database)'")
            }
            throw GatewayError.unauthorized("wrong user name or password for database '\(database)'")
        }
        let cacheKey = hash + "\u{0}" + String(Self.key(password))
        if let expires = verified[cacheKey], expires > ContinuousClock.now {
            return user
        }
        let matches = try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash) }
        guard matches else {
            throw GatewayError.unauthorized("wrong user name or password for database '\(database)'")
        }
        if verified.count >= Self.maximumCacheEntries { verified.removeAll() }
        verified[cacheKey] = ContinuousClock.now + Self.cacheLifetime
        return user
    }
}
