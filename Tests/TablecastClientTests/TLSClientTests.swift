import Foundation
import Logging
import TableModel
import TablecastClient
import TablecastProtocol
import TablecastServer
import WebSocketTransport
import XCTest

/// The client library over `wss://` against a real TLS server, with certificates made by the openssl tool.
final class TLSClientTests: XCTestCase {
    private var directory: URL!

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tablecast-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() async throws {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A self-signed certificate for 127.0.0.1 and localhost, and its key.
    private func certificate(_ name: String) throws -> ServerTLS {
        let tls = ServerTLS(
            certificatePath: directory.appendingPathComponent("\(name).pem").path,
            privateKeyPath: directory.appendingPathComponent("\(name)-key.pem").path)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", tls.privateKeyPath, "-out", tls.certificatePath,
            "-days", "2", "-subj", "/CN=\(name)", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        return tls
    }

    private func startServer(_ tls: ServerTLS) async throws -> TableServer {
        var logger = Logger(label: "test-server")
        logger.logLevel = .warning
        return try await TableServer.start(
            .init(port: 0, databasePath: directory.appendingPathComponent("t.db").path, synchronous: .normal, tls: tls),
            logger: logger)
    }

    func testIntentsAndUpdatesOverWSSVerifiedAgainstAPrivateCA() async throws {
        let tls = try certificate("server")
        let server = try await startServer(tls)
        var configuration = TablecastClient.Configuration(url: "wss://localhost:\(server.port)/")
        configuration.tls = ClientTLS(caCertificatePath: tls.certificatePath)
        let client = try TablecastClient(configuration: configuration)
        client.connect()
        try await client.createTable("t", sections: [SectionContent(rows: [RowContent(value: "fig")])])
        let replica = try await client.subscribe("t")
        XCTAssertEqual(replica.table.sections[0].rows.map(\.value), ["fig"])
        let ack = try await client.insert("t", at: RowPath(section: 0, row: 1), value: "milk")
        XCTAssertEqual(client.replica(of: "t")?.version, ack.version)
        await client.close()
        await server.shutdown()
    }

    func testAnUntrustedCertificateIsReportedWithItsReason() async throws {
        let server = try await startServer(try certificate("server"))
        var configuration = TablecastClient.Configuration(url: "wss://127.0.0.1:\(server.port)/")
        configuration.tls = ClientTLS(caCertificatePath: try certificate("other").certificatePath)
        let client = try TablecastClient(configuration: configuration)
        let events = client.events()
        client.connect()
        var reason: String?
        for await event in events {
            if case .tlsFailed(let text) = event {
                reason = text
                break
            }
        }
        XCTAssertEqual(reason, "the server's certificate did not verify: self-signed certificate")
        XCTAssertNotEqual(client.connectionState, .live)
        await client.close()
        await server.shutdown()
    }

    func testAMismatchedKeyIsRefusedAtStart() async throws {
        let server = try certificate("server")
        let other = try certificate("other")
        let mismatched = ServerTLS(certificatePath: server.certificatePath, privateKeyPath: other.privateKeyPath)
        do {
            _ = try await startServer(mismatched)
            XCTFail("a server started with a key that does not match its certificate")
        } catch let error as WebSocketTransportError {
            XCTAssertEqual(error, .invalidCertificate)
            XCTAssertTrue(error.message.contains(other.privateKeyPath), error.message)
        }
    }
}
