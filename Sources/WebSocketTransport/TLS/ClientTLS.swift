import CLibWebSockets
import Foundation

/// How a client verifies the servers it connects to over TLS (`wss://`).
public struct ClientTLS: Sendable, Hashable {
    /// A PEM file of CA certificates trusted besides the system's store (for a private CA), or `nil`.
    public var caCertificatePath: String?
    /// False accepts any certificate for any name: tests only, never in production.
    public var verifiesCertificates: Bool

    /// - Parameters:
    ///   - caCertificatePath: extra trusted CAs; the system's CA store is always trusted.
    ///   - verifiesCertificates: default true; false skips verification (self-signed, expired, wrong name).
    public init(caCertificatePath: String? = nil, verifiesCertificates: Bool = true) {
        self.caCertificatePath = caCertificatePath
        self.verifiesCertificates = verifiesCertificates
    }

    /// Checks that the CA file, if any, is readable and holds PEM certificates.
    func validate() throws {
        guard let path = caCertificatePath else { return }
        var error = [CChar](repeating: 0, count: 512)
        guard access(path, R_OK) == 0 else {
            throw WebSocketTransportError.invalidCertificate.with(
                message: "cannot read CA certificate \(path): \(String(cString: strerror(errno)))")
        }
        guard CLibWebSockets_checkCAFile(path, &error, error.count) == 1 else {
            throw WebSocketTransportError.invalidCertificate.with(message: openSSLMessage(error))
        }
    }
}
