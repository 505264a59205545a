/// An error thrown by the transport. Compare with the static members; `message` carries the detail.
public struct WebSocketTransportError: Error, Hashable, CustomStringConvertible {
    private enum Code: Hashable {
        case contextCreationFailed
        case listenFailed
        case invalidConfiguration
        case invalidCertificate
    }

    private let code: Code
    /// What went wrong, for people.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// libwebsockets could not create its context (see the libwebsockets log for why).
    public static let contextCreationFailed = WebSocketTransportError(
        .contextCreationFailed, "lws_create_context failed")
    /// The server could not listen on the requested address and port (e.g. the port is in use).
    public static let listenFailed = WebSocketTransportError(.listenFailed, "could not listen")
    /// A configuration value is out of range.
    public static let invalidConfiguration = WebSocketTransportError(.invalidConfiguration, "invalid configuration")

    /// A TLS certificate, key or CA file is missing, unreadable, not PEM, or the key does not match the certificate.
    public static let invalidCertificate = WebSocketTransportError(.invalidCertificate, "invalid certificate")

    /// The same error with a more specific message; equality only compares the kind.
    func with(message: String) -> Self { Self(code, message) }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String { message }
}
