import Crypto
import Foundation
import Strata
import Synchronization

/// The APNs provider tokens of one configuration: an ES256 JWT, made once and reused for every
/// request, renewed as it ages.
///
/// The renewal rule (APNs refuses a token older than an hour with `ExpiredProviderToken`, and a
/// provider that renews more often than every 20 minutes with `TooManyProviderTokenUpdates`):
/// - the token is renewed when it is ``renewalAge`` (50 minutes) old by `clock`;
/// - it is never renewed when it is younger than ``minimumAge`` (20 minutes), unless APNs
///   answered `ExpiredProviderToken` to that very token (``expired(_:)``): then once, whoever
///   asks first — a request that carried an older token takes the one renewed already;
/// - a renewed token's `iat` is later than the previous one's (at least by one second);
/// - renewing happens under a lock, so at most one renewal is ever in flight (signing takes
///   well under a millisecond);
/// - a clock that moves back keeps the token until it is 50 minutes old by that clock.
final class APNsProviderToken: Sendable {
    /// A token in use.
    struct Token: Sendable, Equatable {
        /// `bearer <JWT>`: the `authorization` header value.
        let authorization: String
        /// Its `iat`, in seconds since 1970.
        let issuedAt: Int64
        /// Counts the tokens made, from 1.
        let generation: Int
    }

    /// The header: the algorithm and the key id.
    struct Header: Encodable { let alg = "ES256"; let kid: String }
    /// The claims: the team id and the issue time.
    struct Claims: Encodable { let iss: String; let iat: Int64 }

    /// The age at which a token is renewed.
    static let renewalAge: Int64 = 50 * 60
    /// The age under which a token is only renewed when APNs said it expired.
    static let minimumAge: Int64 = 20 * 60

    private let configuration: APNsConfiguration
    private let clock: @Sendable () -> Date
    private let state = Mutex<Token?>(nil)

    init(configuration: APNsConfiguration, clock: @Sendable @escaping () -> Date) {
        self.configuration = configuration
        self.clock = clock
    }

    /// The token to send now: the current one, or a new one when it is due.
    func current() throws -> Token {
        try state.withLock { token in
            let now = Self.seconds(clock())
            if let t = token, now - t.issuedAt < Self.renewalAge { return t }
            let renewed = try make(after: token, now: now)
            token = renewed
            return renewed
        }
    }

    /// APNs answered `ExpiredProviderToken` to `rejected`: renews it if it is still the current
    /// token (whatever its age), and returns the token to retry with.
    func expired(_ rejected: Token) throws -> Token {
        try state.withLock { token in
            if let t = token, t.generation != rejected.generation { return t }
            let renewed = try make(after: token, now: Self.seconds(clock()))
            token = renewed
            return renewed
        }
    }

    private func make(after previous: Token?, now: Int64) throws -> Token {
        let iat = max(now, (previous?.issuedAt ?? .min) + 1)
        let jwt: String
        do {
            jwt = try JSONWebToken.es256(header: Header(kid: configuration.keyID),
                                        claims: Claims(iss: configuration.teamID, iat: iat), key: configuration.privateKey)
        } catch {
            throw StrataError.network("APNs: the provider token of key id \(configuration.keyID) cannot be signed: \(error)")
        }
        return Token(authorization: "bearer " + jwt, issuedAt: iat, generation: (previous?.generation ?? 0) + 1)
    }

    /// Whole seconds since 1970 (rounded down).
    static func seconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }
}
