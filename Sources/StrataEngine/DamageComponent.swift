/// The background work that met damage (``BackgroundDamage/component``): what
/// ``StoreStatistics/damageByComponent`` counts by.
///
/// A component is a name, stable across versions so that a program may match it: the engine's
/// own (``recordTransform(keyspace:)``) and those of the collections (``pushTimer``).
public struct DamageComponent: RawRepresentable, Hashable, Sendable, Codable, CodingKeyRepresentable,
                               CustomStringConvertible {
    /// The component's name, as logged and encoded.
    public let rawValue: String

    /// A component named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The rewriting of one keyspace's records in flushes and compactions (for time series, the
    /// storing of events as chunks): a record it cannot read is copied through unchanged.
    public static func recordTransform(keyspace: UInt64) -> DamageComponent {
        DamageComponent(rawValue: "record transform of keyspace \(keyspace)")
    }

    /// The push timer, which releases waiting (throttled) updates when they come due: a release
    /// that fails is tried again at its next wake-up.
    public static let pushTimer = DamageComponent(rawValue: "push timer")

    /// The name.
    public var description: String { rawValue }
}
