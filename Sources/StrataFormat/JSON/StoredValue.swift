/// A value type that names its stored identity once and for all, so that renaming the Swift type
/// or its module does not orphan the collections that hold it.
///
/// A time series or channel of a `Codable` type records the type's identity in its catalog entry,
/// and opening it with a type of another identity throws ``StrataError/typeMismatch(_:)``.
/// Without this protocol, the identity is the type's name as `String(reflecting:)` spells it with
/// every module qualifier left out (`Reading`, `Sensor.Reading`, `Array<Reading>`), so moving a
/// type to another module keeps it, while renaming the type or an enclosing type changes it. A
/// type that adopts `StoredValue` keeps the identity it names (as Core Data's renaming identifier
/// and GRDB's `databaseTableName` do):
///
/// ```swift
/// // Was `struct Reading: Codable, Sendable` in module `Weather`.
/// struct SensorReading: StoredValue {
///     static let storedTypeName = "Reading"
///     var celsius: Double
/// }
/// let temperatures = try store.timeSeries("temperatures", of: SensorReading.self)   // the old series
/// ```
///
/// A collection created by a build that stored module-qualified names (`Weather.Reading`) opens
/// with a type whose identity is that name without its module (`Reading`), or, for a type that
/// adopts `StoredValue`, exactly that name (`storedTypeName = "Weather.Reading"`).
///
/// The identity says which collection a type may open; it is not a schema. The values are stored
/// in Strata's binary JSON form, so a renamed type decodes the stored values if its coding keys
/// still fit them. The identity of a generic type's arguments is their default one: conform the
/// generic type itself to name the identity of `Array<SensorReading>`.
public protocol StoredValue: Codable, Sendable {
    /// The identity stored with every time series and channel of this type: any non-empty string
    /// that no other value type of the program uses. Changing it orphans the collections stored
    /// under the old one.
    static var storedTypeName: String { get }
}
