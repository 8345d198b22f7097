"""GET /api/v1/schema: the OpenAPI document, generated once per process and build of the tools' specs.

The document follows from the code and the specs alone (it is public: no caller sees more or less),
and drf-spectacular takes about two seconds of CPU to generate it: too much to spend on every request
to an endpoint anyone may call without a token. Each format is still rendered from it per request.
"""

from __future__ import annotations

from typing import Any

from django.utils import translation
from drf_spectacular.views import SpectacularAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from hub_tools import tools

_documents: dict[tuple[Any, ...], dict[str, Any]] = {}


class SchemaView(SpectacularAPIView):
    def _get_schema_response(self, request: Request) -> Response:
        version = self.api_version or request.version or self._get_version_parameter(request)
        key = (version, translation.get_language(), tools.BUILDS[0])
        document = _documents.get(key)
        if document is None:
            generator = self.generator_class(urlconf=self.urlconf, api_version=version, patterns=self.patterns)
            document = _documents.setdefault(key, generator.get_schema(request=request, public=self.serve_public))
        filename = self._get_filename(request, version)
        return Response(data=document, headers={"Content-Disposition": f'inline; filename="{filename}"'})
