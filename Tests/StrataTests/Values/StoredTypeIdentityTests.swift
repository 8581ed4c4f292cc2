import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Value types of the tests below (internal, so that their reflecting names are plain paths).
enum IdentityFixtures {
    /// The type as first written.
    struct Reading: Codable, Sendable, Equatable {
        var celsius: Double
    }

    /// `Reading` renamed: it names `Reading`'s identity.
    struct SensorReading: StoredValue, Equatable {
        static let storedTypeName = "IdentityFixtures.Reading"
        var celsius: Double
    }

    /// `Reading` renamed, naming the module-qualified name an earlier build stored.
    struct QualifiedReading: StoredValue, Equatable {
        static let storedTypeName = "OldApp.IdentityFixtures.Reading"
        var celsius: Double
    }

    /// The same shape as `Reading` under another name: a different type.
    struct Humidity: Codable, Sendable, Equatable {
        var celsius: Double
    }

    /// A different type that claims an identity of its own.
    struct Pressure: StoredValue, Equatable {
        static let storedTypeName = "Pressure"
        var celsius: Double
    }

    /// A type that names no identity at all.
    struct Nameless: StoredValue {
        static let storedTypeName = ""
        var x: Int
    }

    enum Outer {
        struct Inner: Codable, Sendable {}
    }
}

@Suite("Stored type identity")
struct StoredTypeIdentityTests {
    typealias Reading = IdentityFixtures.Reading

    @Test("the default identity is the reflecting name without its modules; a StoredValue names its own")
    func identities() throws {
        #expect(try ValueCodec<Reading>.typeName == "Codable:.IdentityFixtures.Reading")
        #expect(try ValueCodec<IdentityFixtures.Outer.Inner>.typeName == "Codable:.IdentityFixtures.Outer.Inner")
        #expect(try ValueCodec<[Reading]>.typeName == "Codable:.Array<IdentityFixtures.Reading>")
        #expect(try ValueCodec<[String: Reading?]>.typeName == "Codable:.Dictionary<String, Optional<IdentityFixtures.Reading>>")
        #expect(try ValueCodec<IdentityFixtures.SensorReading>.typeName == "Codable:.IdentityFixtures.Reading")
        #expect(try ValueCodec<IdentityFixtures.Pressure>.typeName == "Codable:.Pressure")
        #expect(throws: StrataError.self) { try ValueCodec<IdentityFixtures.Nameless>.typeName }

        #expect(StoredTypeName.withoutModules("MyApp.Reading") == "Reading")
        #expect(StoredTypeName.withoutModules("MyApp.Outer<Swift.Int>.Inner") == "Outer<Int>.Inner")
        #expect(StoredTypeName.withoutModules("(a: Swift.Int, MyApp.P)") == "(a: Int, P)")
        #expect(StoredTypeName.withoutModules("MyApp.(unknown context at $10a4c).Local") == "(unknown context at $10a4c).Local")
        #expect(StoredTypeName.withoutModules("Reading") == "Reading")
    }

    @Test("stored names: the new form, a module-qualified legacy name of the same identity, nothing else")
    func matching() throws {
        #expect(try ValueCodec<Reading>.accepts(storedTypeName: "Codable:.IdentityFixtures.Reading"))
        #expect(try ValueCodec<Reading>.accepts(storedTypeName: "Codable:OldApp.IdentityFixtures.Reading"))
        #expect(try !ValueCodec<Reading>.accepts(storedTypeName: "Codable:OldApp.Reading"))
        #expect(try !ValueCodec<Reading>.accepts(storedTypeName: "Codable:.Reading"))
        #expect(try !ValueCodec<Reading>.accepts(storedTypeName: "JSON"))
        // A nested type's new-form name is not mistaken for a legacy top-level one.
        #expect(try !ValueCodec<IdentityFixtures.Outer.Inner>.accepts(storedTypeName: "Codable:.Outer.Inner"))
        #expect(try ValueCodec<IdentityFixtures.Outer.Inner>.accepts(storedTypeName: "Codable:App.IdentityFixtures.Outer.Inner"))
        // A StoredValue may name the legacy name exactly; a default identity may not.
        #expect(try ValueCodec<IdentityFixtures.QualifiedReading>.accepts(storedTypeName: "Codable:OldApp.IdentityFixtures.Reading"))
        #expect(try !ValueCodec<IdentityFixtures.QualifiedReading>.accepts(storedTypeName: "Codable:.IdentityFixtures.Reading"))
        #expect(try ValueCodec<Double>.accepts(storedTypeName: "Double"))
        #expect(try !ValueCodec<Double>.accepts(storedTypeName: "Codable:.Double"))
    }

    @Test("a series and a channel of a type reopen with a renamed type that names its identity")
    func renamedType() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var store = try Store.open(at: dir.url)
        try store.timeSeries("temperatures", of: Reading.self).append(Reading(celsius: 21.5))
        try store.channel("readings", of: Reading.self).publish(Reading(celsius: 19))
        try store.close()

        store = try Store.open(at: dir.url)
        let series = try store.timeSeries("temperatures", of: IdentityFixtures.SensorReading.self)
        #expect(try series.latest()?.value == IdentityFixtures.SensorReading(celsius: 21.5))
        try series.append(IdentityFixtures.SensorReading(celsius: 22))
        let channel = try store.channel("readings", of: IdentityFixtures.SensorReading.self)
        #expect(try channel.history().messages.map(\.message) == [IdentityFixtures.SensorReading(celsius: 19)])
        // The entry keeps its identity: the old type opens it too.
        #expect(try store.timeSeries("temperatures", of: Reading.self).query(.values).events.map(\.value) ==
                [Reading(celsius: 21.5), Reading(celsius: 22)])
        try store.close()
    }

    @Test("a genuinely different type still throws typeMismatch")
    func differentType() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        try store.timeSeries("temperatures", of: Reading.self).append(Reading(celsius: 21.5))
        _ = try store.channel("readings", of: Reading.self)
        func mismatch(_ body: () throws -> Void) -> Bool {
            do { try body(); return false } catch StrataError.typeMismatch { return true } catch { return false }
        }
        #expect(mismatch { _ = try store.timeSeries("temperatures", of: IdentityFixtures.Humidity.self) })
        #expect(mismatch { _ = try store.timeSeries("temperatures", of: IdentityFixtures.Pressure.self) })
        #expect(mismatch { _ = try store.timeSeries("temperatures", of: Double.self) })
        #expect(mismatch { _ = try store.channel("readings", of: IdentityFixtures.Humidity.self) })
        #expect(mismatch { _ = try store.channel("readings", of: IdentityFixtures.Pressure.self) })
        #expect(throws: StrataError.self) { _ = try store.timeSeries("other", of: IdentityFixtures.Nameless.self) }
    }

    @Test("a collection stored under a module-qualified name opens with the type moved to another module, or renamed")
    func legacyNames() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let legacy = "Codable:OldApp.IdentityFixtures.Reading"
        var store = try Store.open(at: dir.url)
        // What an earlier build wrote: the reflecting name of a type of module OldApp.
        _ = try store.catalog.openOrCreate(kind: .timeSeries, name: "temperatures") {
            SeriesPayload(typeName: legacy, options: TimeSeriesOptions()).encode()
        }
        _ = try store.channelState("readings", create: (legacy, ChannelOptions()))
        try store.close()

        store = try Store.open(at: dir.url)
        let series = try store.timeSeries("temperatures", of: Reading.self)
        try series.append(Reading(celsius: 20))
        let channel = try store.channel("readings", of: Reading.self)
        try channel.publish(Reading(celsius: 18))
        // Left as it is: the entry keeps the legacy name.
        #expect(series.state.typeName == legacy)
        #expect(channel.state.typeName == legacy)
        try store.close()

        store = try Store.open(at: dir.url)
        defer { try? store.close() }
        #expect(try store.timeSeries("temperatures", of: IdentityFixtures.QualifiedReading.self).latest()?.value.celsius == 20)
        #expect(try store.timeSeries("temperatures", of: IdentityFixtures.SensorReading.self).latest()?.value.celsius == 20)
        #expect(try store.channel("readings", of: IdentityFixtures.SensorReading.self).history().messages.count == 1)
        #expect(throws: StrataError.self) { _ = try store.timeSeries("temperatures", of: IdentityFixtures.Humidity.self) }
    }

    @Test("the inspectors show the stored type name and decode the values of both forms")
    func inspectors() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        _ = try store.catalog.openOrCreate(kind: .timeSeries, name: "old") {
            SeriesPayload(typeName: "Codable:OldApp.IdentityFixtures.Reading", options: TimeSeriesOptions()).encode()
        }
        try store.timeSeries("old", of: Reading.self).append(Reading(celsius: 1))
        try store.timeSeries("new", of: IdentityFixtures.SensorReading.self).append(IdentityFixtures.SensorReading(celsius: 2))
        try store.channel("room", of: IdentityFixtures.SensorReading.self).publish(IdentityFixtures.SensorReading(celsius: 3))
        try store.close()

        let series = try SeriesInspector.series(ofStoreAt: dir.path)
        #expect(series.map(\.path) == ["new", "old"])
        #expect(series.map(\.valueType) == ["Codable:.IdentityFixtures.Reading", "Codable:OldApp.IdentityFixtures.Reading"])
        #expect(try SeriesInspector.dump(series: "new", ofStoreAt: dir.path).events.map(\.value) == [["celsius": 2.0]])
        #expect(try SeriesInspector.dump(series: "old", ofStoreAt: dir.path).events.map(\.value) == [["celsius": 1.0]])
        let channels = try ChannelInspector.channels(ofStoreAt: dir.path)
        #expect(channels.map(\.messageType) == ["Codable:.IdentityFixtures.Reading"])
        let messages = try ChannelInspector.dump(channel: "room", ofStoreAt: dir.path).messages.map(\.message)
        #expect(messages == [#"{"celsius":3.0}"#], "\(messages)")
    }
}
