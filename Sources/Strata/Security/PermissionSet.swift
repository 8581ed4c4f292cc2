@_spi(Layers) import StrataFormat

extension Permission {
    /// The permission's bit in a stored policy (FORMAT.md §17): never renumber.
    var bit: UInt32 {
        switch self {
        case .readTopic: 1 << 0
        case .selectTopic: 1 << 1
        case .updateTopic: 1 << 2
        case .modifyTopic: 1 << 3
        case .editTimeSeriesEvents: 1 << 4
        case .editOwnTimeSeriesEvents: 1 << 5
        case .queryObsoleteTimeSeriesEvents: 1 << 6
        case .viewSecurity: 1 << 7
        case .modifySecurity: 1 << 8
        }
    }
}

/// A set of permissions as the bits of ``Permission/bit``: what a session caches per path, so
/// that a check is one dictionary lookup and one AND.
package struct PermissionSet: Hashable, Sendable {
    package var bits: UInt32

    package static let none = PermissionSet(bits: 0)
    /// Every bit a known permission uses.
    package static let known = PermissionSet(Permission.allCases)

    package init(bits: UInt32) { self.bits = bits }

    package init<S: Sequence>(_ permissions: S) where S.Element == Permission {
        bits = permissions.reduce(0) { $0 | $1.bit }
    }

    @inline(__always)
    package func contains(_ permission: Permission) -> Bool { bits & permission.bit != 0 }

    package mutating func formUnion(_ other: PermissionSet) { bits |= other.bits }

    /// The permissions, in declaration order.
    package var permissions: Set<Permission> { Set(Permission.allCases.filter(contains)) }
}
