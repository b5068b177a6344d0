#!/bin/sh
# Makes the test PKI: two control planes ("first", "second"), each a CA and a serving
# certificate for 127.0.0.1 / localhost signed by it, valid for 100 years. For tests only:
# the keys are public. Run from anywhere: sh tests/pki/make.sh
set -eu
cd "$(dirname "$0")"
for plane in first second; do
  mkdir -p "$plane"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500 \
    -subj "/CN=kubernetes-ca-$plane" -keyout "$plane/ca.key" -out "$plane/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/CN=kube-apiserver" -keyout "$plane/server.key" -out "$plane/server.csr" 2>/dev/null
  openssl x509 -req -in "$plane/server.csr" -CA "$plane/ca.crt" -CAkey "$plane/ca.key" \
    -CAcreateserial -days 36500 -out "$plane/server.crt" -extfile /dev/stdin 2>/dev/null <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost
authorityKeyIdentifier=keyid
subjectKeyIdentifier=hash
EXT
  rm -f "$plane/server.csr" "$plane/ca.key" "$plane/ca.srl"
done
