/*
 * names.h - the engine's own rules for the names a caller gives that end up in request
 * URLs: Docker volume names and image references. Pure functions over bytes (a
 * JavaScript string may hold NULs; a name holding one is invalid).
 *
 * Owns: nothing.
 *
 * Checked before any I/O, so a name the engine would refuse never reaches it, and a name
 * that is accepted can hold none of "/", "%", "?", "#", and no "." or ".." segment: it
 * cannot turn one request into another (engine.c's url_escape escapes every byte outside
 * RFC 3986's unreserved set as well).
 */
#ifndef SBX_NAMES_H
#define SBX_NAMES_H

#include <stddef.h>

/* The longest image name (the part before ":tag" and "@digest", once normalized to
 * docker.io/library/... as the engine normalizes it): distribution/reference's
 * NameTotalLengthMax. */
#define IMAGE_NAME_MAX 255

/* Docker's volume name pattern (its local driver's): ^[a-zA-Z0-9][a-zA-Z0-9_.-]+$ */
int volume_name_valid(const char *name, size_t len);

/*
 * An image reference by the grammar of github.com/distribution/reference, as the engine
 * parses what it is given (ParseAnyReference):
 *
 *   reference        := name [ ":" tag ] [ "@" digest ]
 *   name             := [ domain "/" ] path-component ( "/" path-component )*
 *   domain           := host [ ":" port ]
 *   host             := domain-component ( "." domain-component )* | "[" ipv6 "]"
 *   domain-component := [a-zA-Z0-9] | [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]
 *   port             := [0-9]+
 *   ipv6             := [a-fA-F0-9:]+
 *   path-component   := alnum ( separator alnum )*
 *   alnum            := [a-z0-9]+
 *   separator        := "." | "_" | "__" | "-"+
 *   tag              := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
 *   digest           := algorithm ":" [0-9a-fA-F]{32,}
 *   algorithm        := [A-Za-z][A-Za-z0-9]* ( [-_+.] [A-Za-z][A-Za-z0-9]* )*
 *
 * and a normalized name of at most IMAGE_NAME_MAX bytes. An image id (64 lowercase hex
 * digits, or a prefix of one) and "sha256:<hex>" are references by this grammar too.
 */
int image_reference_valid(const char *ref, size_t len);

#endif
