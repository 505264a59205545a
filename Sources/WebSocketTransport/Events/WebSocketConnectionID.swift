/// Identifies one WebSocket connection for the lifetime of a server or client; never reused.
public struct WebSocketConnectionID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "ws#\(rawValue)" }
}
