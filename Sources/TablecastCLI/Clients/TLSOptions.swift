import ArgumentParser
import Foundation
import TablecastClient
import WebSocketTransport

/// How client subcommands verify a `wss://` server.
struct TLSOptions: ParsableArguments {
    @Option(help: "PEM file of a private CA to trust for wss:// (besides the system's CA store).")
    var caCert: String?

    @Flag(
        help:
            "wss:// without verifying the server's certificate. For tests only: anyone in between can read and change everything."
    )
    var insecure = false

    /// The verification settings; warns on stderr, every time, when verification is off.
    var clientTLS: ClientTLS {
        if insecure {
            Output.error("tablecast: WARNING: --insecure: the server's certificate is NOT verified")
        }
        return ClientTLS(caCertificatePath: caCert, verifiesCertificates: !insecure)
    }
}

/// Exits 1 with a one-line error once `client` reports that the server's certificate did not verify: a command
/// cannot fix that by retrying. Start it before `connect()`.
func exitOnTLSFailure(of client: TablecastClient, url: String) -> Task<Void, Never> {
    let events = client.events()
    return Task {
        for await event in events {
            if case .tlsFailed(let reason) = event {
                Output.error("tablecast: cannot connect to \(url): \(reason)")
                terminateProcess(1)
            }
        }
    }
}
