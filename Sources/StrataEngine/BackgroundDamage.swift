import Foundation
@_spi(Layers) import StrataFormat

/// One piece of damage that background work met and could not hand to a caller: an undecodable
/// record that a compaction copied through unchanged, a release of waiting push updates that
/// failed. Nothing is dropped because of it; it is counted in ``StoreStatistics/damage``, logged,
/// and kept among ``StoreStatistics/recentDamage``.
public struct BackgroundDamage: Sendable, Equatable, CustomStringConvertible {
    /// The work that met it.
    public var component: DamageComponent
    /// The file or key concerned, where known (a key as ``description`` shows keys: its tuple).
    public var subject: String?
    /// What went wrong.
    public var error: StrataError
    /// When it was met (the wall clock).
    public var date: Date

    /// Damage met by `component` at `subject`.
    public init(component: DamageComponent, subject: String?, error: StrataError, date: Date) {
        self.component = component
        self.subject = subject
        self.error = error
        self.date = date
    }

    /// The component, the subject and the error, in one line.
    public var description: String {
        "\(component)" + (subject.map { " at \($0)" } ?? "") + ": \(error)"
    }
}
