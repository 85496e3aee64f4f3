"""LTI 1.3 (Advantage), the tool's side, on PyLTI1p3 (the optional `lms` extra): the launch with
OIDC login, Names and Role Provisioning to import the roster, Assignment and Grade Services to
post the final scores. The course server serves the endpoints later by calling these functions;
`checks lti` uses the services from the command line.

The tool's private key is made in the course folder (lti/tool-private.pem, 0600) and never
leaves it: only its public half is ever shown or sent (the JWKS), and it signs the tool's client
assertions in memory. What the platform sends (an id_token, a roster) is checked before use:
signature against the platform's JWKS, expiry, audience (our client id), a nonce used once.

May import every layer below it (policy for the roster, reports for the gradebook); nothing
imports it but the front ends, and only when the `lms` extra is there.
"""
