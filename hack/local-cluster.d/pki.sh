# shellcheck shell=bash
# Certificates of the local cluster, made once with openssl into $DIR/pki (sourced by hack/local-cluster).
# One CA signs everything: serving certs for the API server, client certs for each component (their
# Common Name and Organization are the identities RBAC's default bindings expect).

# pki_cert NAME CN ORG [SAN]: a key and a CA-signed certificate NAME.{key,crt}, made once.
pki_cert() {
  local name=$1 cn=$2 org=$3 san=${4:-} pki="$DIR/pki"
  [ -s "$pki/$name.crt" ] && return 0
  local ext="$pki/$name.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ -n "$san" ]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=$san"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } > "$ext"
  local subj="/CN=$cn"
  [ -z "$org" ] || subj="/O=$org$subj"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -subj "$subj" \
    -out "$pki/$name.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$ext"
}

# pki_kubeconfig NAME USER: $DIR/NAME.kubeconfig for client cert pki/USER.{crt,key}.
pki_kubeconfig() {
  local name=$1 user=$2 out="$DIR/$1.kubeconfig"
  [ -s "$out" ] && return 0
  cat > "$out" <<KC
apiVersion: v1
kind: Config
clusters:
- name: tslc
  cluster:
    server: https://$NODE_IP:$API_PORT
    certificate-authority: $DIR/pki/ca.crt
users:
- name: $user
  user:
    client-certificate: $DIR/pki/$user.crt
    client-key: $DIR/pki/$user.key
contexts:
- name: tslc
  context: {cluster: tslc, user: $user}
current-context: tslc
KC
}

pki_all() {
  local pki="$DIR/pki"
  mkdir -p "$pki"
  chmod 700 "$pki"
  if [ ! -s "$pki/ca.crt" ]; then
    openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -subj "/CN=tickstack-local-ca" \
      -days 3650 -sha256 -out "$pki/ca.crt" 2>/dev/null
  fi
  if [ ! -s "$pki/sa.key" ]; then
    openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
    openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  fi
  pki_cert apiserver kube-apiserver "" \
    "IP:$NODE_IP,IP:$API_SERVICE_IP,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  pki_cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  pki_cert admin kubernetes-admin system:masters
  pki_cert controller-manager system:kube-controller-manager ""
  pki_cert scheduler system:kube-scheduler ""
  pki_cert kube-proxy system:kube-proxy ""
  pki_cert kubelet "system:node:$NODE_NAME" system:nodes
  # The kubelet's serving certificate (tlsCertFile): signed by the CA, so a client with the
  # cluster's CA (tickstack's agent reading /configz) verifies it.
  pki_cert kubelet-serving "system:node:$NODE_NAME" system:nodes "IP:$NODE_IP,DNS:$NODE_NAME"
  pki_kubeconfig admin admin
  pki_kubeconfig controller-manager controller-manager
  pki_kubeconfig scheduler scheduler
  pki_kubeconfig kube-proxy kube-proxy
  pki_kubeconfig kubelet kubelet
}
