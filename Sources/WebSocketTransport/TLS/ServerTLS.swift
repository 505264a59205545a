import CLibWebSockets
import Foundation

/// The certificate and private key a server serves TLS (https/wss) with.
public struct ServerTLS: Sendable, Hashable {
    /// PEM file: the server's certificate followed by any intermediate certificates.
    public var certificatePath: String
    /// PEM file: the certificate's private key (unencrypted).
    public var privateKeyPath: String

    public init(certificatePath: String, privateKeyPath: String) {
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
    }

    /// Checks that both files are readable, parse, and belong together, the way libwebsockets will load them.
    /// Throws ``WebSocketTransportError/invalidCertificate`` with a one-line reason.
    public func validate() throws {
        for (what, path) in [("certificate", certificatePath), ("private key", privateKeyPath)] {
            guard access(path, R_OK) == 0 else {
                throw WebSocketTransportError.invalidCertificate.with(
                    message: "cannot read \(what) \(path): \(String(cString: strerror(errno)))")
            }
        }
        var error = [CChar](repeating: 0, count: 512)
        guard CLibWebSockets_checkCertificatePair(certificatePath, privateKeyPath, &error, error.count) == 1 else {
            throw WebSocketTransportError.invalidCertificate.with(message: openSSLMessage(error))
        }
    }
}

/// The NUL-terminated text the C checks write into `buffer`.
func openSSLMessage(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
